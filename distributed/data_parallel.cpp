#include "distributed/data_parallel.h"

#include <algorithm>
#include <cstring>

#include "distributed/collectives.h"
#include "distributed/world.h"

namespace nce::distributed {

void broadcast_parameters(nn::Module& module, int root) {
    for (auto& [name, parameter] : module.named_parameters()) {
        Tensor value = parameter->value().clone();
        broadcast_inplace(value, root);
        parameter->set_value(value);
    }
}

void all_reduce_gradients(const std::vector<Var*>& parameters) {
    if (world().size() == 1 || parameters.empty()) return;
    // Which parameters have a gradient on some rank: a max over ranks of 0/1 flags, sent as a sum.
    Tensor has_gradient = Tensor::zeros({static_cast<int64_t>(parameters.size())}, Dtype::Float64);
    for (size_t i = 0; i < parameters.size(); ++i)
        if (parameters[i]->grad().defined()) has_gradient.data<double>()[i] = 1.0;
    all_reduce_sum_inplace(has_gradient);

    // One flat buffer per dtype, so the whole model goes in one message (float32 and float64
    // parameters never mix in one model, but nothing here relies on it).
    for (Dtype dtype : {Dtype::Float32, Dtype::Float64}) {
        std::vector<size_t> members;
        int64_t elements = 0;
        for (size_t i = 0; i < parameters.size(); ++i)
            if (has_gradient.data<double>()[i] > 0 && parameters[i]->dtype() == dtype) {
                members.push_back(i);
                elements += parameters[i]->value().numel();
            }
        if (members.empty()) continue;
        Tensor flat = Tensor::empty({elements}, dtype);
        int64_t offset = 0;
        for (size_t i : members) {
            Tensor grad = parameters[i]->grad();
            Tensor part = grad.defined() ? grad.reshape({-1}) : Tensor::zeros({parameters[i]->value().numel()}, dtype);
            std::memcpy(static_cast<char*>(flat.raw_data()) + offset * static_cast<int64_t>(dtype_size(dtype)),
                        part.raw_data(), part.nbytes());
            offset += part.numel();
        }
        all_reduce_sum_inplace(flat);
        offset = 0;
        for (size_t i : members) {
            Var& parameter = *parameters[i];
            int64_t count = parameter.value().numel();
            parameter.set_grad(slice(flat, 0, offset, offset + count).clone().reshape(parameter.shape()));
            offset += count;
        }
    }
}

void all_reduce_gradients(nn::Module& module) { all_reduce_gradients(module.parameters()); }

double max_parameter_difference_from_main(nn::Module& module) {
    double largest = 0;
    for (auto& [name, parameter] : module.named_parameters()) {
        Tensor mains = parameter->value().clone();
        broadcast_inplace(mains, 0);
        largest = std::max(largest, max_abs_difference(parameter->value(), mains));
    }
    return all_reduce_max(largest);
}

nn::BatchLossFunction data_parallel_loss(nn::BatchLossFunction local_loss, nn::EmbeddingModel& model) {
    NCE_CHECK(local_loss != nullptr, "data_parallel_loss: no loss function given");
    return [local_loss = std::move(local_loss), &model](const nn::StepPosition& position, Generator& generator) {
        nn::BatchLoss share = local_loss(position, generator);
        double share_value = share.value;
        if (share.loss.defined()) {
            NCE_CHECK(share.loss.value().numel() == 1 && share.loss.requires_grad(),
                      "data_parallel_loss: the loss at step {} must be one value that depends on the parameters",
                      position.step);
            share_value = share.loss.value().item();
            share.loss.backward();
        }
        all_reduce_gradients(model);
        Tensor totals = Tensor::from_vector({share_value, static_cast<double>(share.samples)}, {2}, Dtype::Float64);
        all_reduce_sum_inplace(totals);
        return nn::BatchLoss::gradients_ready(totals.at(0), static_cast<int64_t>(totals.at(1)));
    };
}

nn::EvaluationFunction evaluate_on_main_rank(nn::EvaluationFunction evaluate) {
    NCE_CHECK(evaluate != nullptr, "evaluate_on_main_rank: no evaluation function given");
    return [evaluate = std::move(evaluate)](nn::EmbeddingModel& model) {
        Tensor score = Tensor::scalar(is_main_rank() ? evaluate(model) : 0.0, Dtype::Float64);
        broadcast_inplace(score, 0);
        return score.item();
    };
}

nn::TrainerOptions options_for_this_rank(nn::TrainerOptions options) {
    options.seed += static_cast<uint64_t>(world().rank());
    if (!is_main_rank()) {
        options.show_progress = false;
        options.metrics_log_path.clear();
        options.best_checkpoint_path.clear();
        options.last_checkpoint_path.clear();
    }
    return options;
}

}  // namespace nce::distributed
