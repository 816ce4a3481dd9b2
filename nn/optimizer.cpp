#include "nn/optimizer.h"

#include "nn/adam_update.h"

#include <cmath>
#include <set>

namespace nce::nn {
namespace {

void check_learning_rate(const std::string& optimizer, double learning_rate) {
    NCE_CHECK(std::isfinite(learning_rate) && learning_rate >= 0,
              "{}: learning rate {} is not a finite number >= 0; pass one such as 1e-3", optimizer, learning_rate);
}

// SGD's learning rate has no default (as in PyTorch): SGDOptions leaves it NaN until set.
double given_sgd_learning_rate(double learning_rate) {
    NCE_CHECK(!std::isnan(learning_rate),
              "SGD: no learning rate given; SGD has no default, set SGDOptions::learning_rate (e.g. 0.1)");
    return learning_rate;
}

// "12.exp_avg" -> (12, "exp_avg"); throws unless it has that form with index < parameter_count.
std::pair<size_t, std::string> split_state_key(const std::string& optimizer, const std::string& key,
                                               size_t parameter_count) {
    size_t dot = key.find('.');
    bool digits = dot != std::string::npos && dot > 0 && dot < 10;
    for (size_t i = 0; digits && i < dot; ++i) digits = key[i] >= '0' && key[i] <= '9';
    NCE_CHECK(digits && dot + 1 < key.size(),
              "{} load_state: entry '{}' is not named '<parameter index>.<state name>' (as '0.exp_avg')", optimizer,
              key);
    size_t index = std::stoul(key.substr(0, dot));
    NCE_CHECK(index < parameter_count,
              "{} load_state: entry '{}' is for parameter {}, but this optimizer has {} parameters; was the state "
              "saved for a different model?",
              optimizer, key, index, parameter_count);
    return {index, key.substr(dot + 1)};
}

}  // namespace

// ---- Optimizer ----

Optimizer::Optimizer(std::string name, std::vector<Var*> parameters, double learning_rate)
    : name_(std::move(name)), parameters_(std::move(parameters)), learning_rate_(learning_rate) {
    NCE_CHECK(!parameters_.empty(), "{}: the parameter list is empty; pass model.parameters() of a model that has some",
              name_);
    std::set<const Node*> seen;
    for (size_t i = 0; i < parameters_.size(); ++i) {
        const Var* parameter = parameters_[i];
        NCE_CHECK(parameter != nullptr, "{}: parameter {} is a null pointer", name_, i);
        NCE_CHECK(parameter->is_leaf(),
                  "{}: parameter {} (shape {}) is not a leaf that accumulates a gradient (a constant or an op's "
                  "output); make it with Var::parameter",
                  name_, i, shape_string(parameter->shape()));
        NCE_CHECK(seen.insert(parameter->node().get()).second,
                  "{}: parameter {} appears twice in the parameter list; it would be updated twice per step", name_,
                  i);
    }
    check_learning_rate(name_, learning_rate_);
}

void Optimizer::step() {
    for (size_t i = 0; i < parameters_.size(); ++i) {
        Tensor grad = parameters_[i]->grad();
        if (grad.defined()) update(i, *parameters_[i], grad);
    }
    ++step_count_;
}

void Optimizer::zero_grad() {
    for (Var* parameter : parameters_) parameter->zero_grad();
}

void Optimizer::set_learning_rate(double learning_rate) {
    check_learning_rate(name_, learning_rate);
    learning_rate_ = learning_rate;
}

OptimizerState Optimizer::state() const {
    OptimizerState out;
    out.step_count = step_count_;
    for (size_t i = 0; i < parameters_.size(); ++i)
        for (auto& [name, tensor] : parameter_state(i)) out.tensors[std::to_string(i) + "." + name] = tensor;
    return out;
}

void Optimizer::load_state(const OptimizerState& state) {
    NCE_CHECK(state.step_count >= 0, "{} load_state: step count {} is negative", name_, state.step_count);
    std::vector<std::map<std::string, Tensor>> entries(parameters_.size());
    for (auto& [key, tensor] : state.tensors) {
        auto [index, name] = split_state_key(name_, key, parameters_.size());
        NCE_CHECK(tensor.defined(), "{} load_state: entry '{}' is an undefined tensor", name_, key);
        entries[index][name] = tensor;
    }
    load_parameter_states(entries);  // checks everything before it changes anything
    step_count_ = state.step_count;
}

Tensor Optimizer::loaded_tensor(size_t index, const std::string& name, const Tensor& tensor,
                                const Shape& expected) const {
    NCE_CHECK(tensor.shape() == expected && is_floating(tensor.dtype()),
              "{} load_state: entry '{}.{}' is {} {} but should be a float tensor of shape {}; was the state saved "
              "for a different model?",
              name_, index, name, dtype_name(tensor.dtype()), shape_string(tensor.shape()), shape_string(expected));
    const Var& parameter = *parameters_[index];
    return tensor.to(parameter.value().device()).to(parameter.dtype()).clone();
}

void Optimizer::fail_unknown_entry(size_t index, const std::string& name) const {
    fail("{} load_state: entry '{}.{}' is not state this {} keeps; was it saved by another optimizer or with other "
         "options?",
         name_, index, name, name_);
}

// ---- SGD ----

SGD::SGD(std::vector<Var*> parameters, SGDOptions options)
    : Optimizer("SGD", std::move(parameters), given_sgd_learning_rate(options.learning_rate)),
      options_(options),
      momentum_buffers_(this->parameters().size()) {
    NCE_CHECK(std::isfinite(options.momentum) && options.momentum >= 0, "SGD: momentum {} must be >= 0",
              options.momentum);
    NCE_CHECK(std::isfinite(options.dampening), "SGD: dampening {} is not finite", options.dampening);
    NCE_CHECK(std::isfinite(options.weight_decay) && options.weight_decay >= 0, "SGD: weight_decay {} must be >= 0",
              options.weight_decay);
    NCE_CHECK(!options.nesterov || (options.momentum > 0 && options.dampening == 0),
              "SGD: nesterov needs momentum > 0 and dampening 0 (got momentum {}, dampening {})", options.momentum,
              options.dampening);
}

// PyTorch's SGD (torch/optim/sgd.py, _single_tensor_sgd), for parameter p with gradient g:
//   d_p = g + weight_decay · p
//   with momentum: buf = d_p                                     on p's first update
//                  buf = momentum · buf + (1 - dampening) · d_p  after that
//                  d_p = d_p + momentum · buf   (nesterov)   or   d_p = buf
//   p = p - lr · d_p
void SGD::update(size_t index, Var& parameter, const Tensor& grad) {
    const Tensor& p = parameter.value();
    Tensor d_p = options_.weight_decay != 0 ? grad + p * options_.weight_decay : grad;
    if (options_.momentum != 0) {
        Tensor& buf = momentum_buffers_[index];
        if (!buf.defined())
            buf = d_p.clone();
        else
            buf = buf * options_.momentum + d_p * (1 - options_.dampening);
        d_p = options_.nesterov ? d_p + buf * options_.momentum : buf;
    }
    parameter.set_value(p - d_p * learning_rate());
}

std::map<std::string, Tensor> SGD::parameter_state(size_t index) const {
    if (!momentum_buffers_[index].defined()) return {};
    return {{"momentum_buffer", momentum_buffers_[index]}};
}

void SGD::load_parameter_states(const std::vector<std::map<std::string, Tensor>>& entries) {
    std::vector<Tensor> buffers(parameters().size());
    for (size_t i = 0; i < entries.size(); ++i)
        for (auto& [name, tensor] : entries[i]) {
            if (name != "momentum_buffer" || options_.momentum == 0) fail_unknown_entry(i, name);
            buffers[i] = loaded_tensor(i, name, tensor, parameters()[i]->shape());
        }
    momentum_buffers_ = std::move(buffers);
}

// ---- Adam and AdamW ----

Adam::Adam(std::vector<Var*> parameters, AdamOptions options)
    : Adam("Adam", std::move(parameters), options, WeightDecay::L2InGradient) {}

Adam::Adam(std::string name, std::vector<Var*> parameters, AdamOptions options, WeightDecay weight_decay)
    : Optimizer(name, std::move(parameters), options.learning_rate),
      options_(options),
      weight_decay_mode_(weight_decay),
      moments_(this->parameters().size()) {
    NCE_CHECK(options.beta1 >= 0 && options.beta1 < 1, "{}: beta1 {} must be in [0, 1)", name, options.beta1);
    NCE_CHECK(options.beta2 >= 0 && options.beta2 < 1, "{}: beta2 {} must be in [0, 1)", name, options.beta2);
    NCE_CHECK(std::isfinite(options.eps) && options.eps >= 0, "{}: eps {} must be >= 0", name, options.eps);
    NCE_CHECK(std::isfinite(options.weight_decay) && options.weight_decay >= 0, "{}: weight_decay {} must be >= 0",
              name, options.weight_decay);
}

AdamW::AdamW(std::vector<Var*> parameters, AdamWOptions options)
    : Adam("AdamW", std::move(parameters),
           AdamOptions{.learning_rate = options.learning_rate,
                       .beta1 = options.beta1,
                       .beta2 = options.beta2,
                       .eps = options.eps,
                       .weight_decay = options.weight_decay,
                       .amsgrad = options.amsgrad},
           WeightDecay::Decoupled) {}

// PyTorch's Adam and AdamW (torch/optim/adam.py and adamw.py, _single_tensor_adam[w]), for
// parameter p with gradient g; exp_avg and exp_avg_sq start at 0 and step at 0:
//   step = step + 1
//   Adam:  g = g + weight_decay · p              (L2 penalty, part of the gradient)
//   AdamW: p = p · (1 - lr · weight_decay)       (decoupled: shrinks p, the gradient is untouched)
//   exp_avg    = beta1 · exp_avg    + (1 - beta1) · g        running mean of g
//   exp_avg_sq = beta2 · exp_avg_sq + (1 - beta2) · g ⊙ g    running mean of g²
//   bias_correction1 = 1 - beta1^step    (the averages started at 0; dividing by these
//   bias_correction2 = 1 - beta2^step     removes that pull towards 0)
//   amsgrad: max_exp_avg_sq = max(max_exp_avg_sq, exp_avg_sq), used below instead of exp_avg_sq
//   denom = sqrt(exp_avg_sq) / sqrt(bias_correction2) + eps
//   p = p - (lr / bias_correction1) · exp_avg / denom
void Adam::update(size_t index, Var& parameter, const Tensor& grad) {
    Moments& m = moments_[index];
    Tensor p = parameter.value();
    if (!m.exp_avg.defined()) {
        m.exp_avg = zeros_like(p);
        m.exp_avg_sq = zeros_like(p);
        if (options_.amsgrad) m.max_exp_avg_sq = zeros_like(p);
    }
    m.step += 1;

    // nn/adam_update.h: the lines above in one sweep over the parameter, bit-identical to
    // reference_adam_update, which spells them out one Tensor operation at a time.
    AdamHyperparameters hyperparameters{.learning_rate = learning_rate(),
                                        .beta1 = options_.beta1,
                                        .beta2 = options_.beta2,
                                        .eps = options_.eps,
                                        .weight_decay = options_.weight_decay,
                                        .decoupled_weight_decay = weight_decay_mode_ == WeightDecay::Decoupled,
                                        .amsgrad = options_.amsgrad,
                                        .step = m.step};
    AdamTensors next = fused_adam_update({p, m.exp_avg, m.exp_avg_sq, m.max_exp_avg_sq}, grad, hyperparameters);
    m.exp_avg = next.exp_avg;
    m.exp_avg_sq = next.exp_avg_sq;
    if (options_.amsgrad) m.max_exp_avg_sq = next.max_exp_avg_sq;
    parameter.set_value(next.parameter);
}

std::map<std::string, Tensor> Adam::parameter_state(size_t index) const {
    const Moments& m = moments_[index];
    if (!m.exp_avg.defined()) return {};
    std::map<std::string, Tensor> out{{"step", Tensor::from_indices({m.step}, {})},
                                      {"exp_avg", m.exp_avg},
                                      {"exp_avg_sq", m.exp_avg_sq}};
    if (options_.amsgrad) out["max_exp_avg_sq"] = m.max_exp_avg_sq;
    return out;
}

void Adam::load_parameter_states(const std::vector<std::map<std::string, Tensor>>& entries) {
    std::vector<Moments> moments(parameters().size());
    for (size_t i = 0; i < entries.size(); ++i) {
        if (entries[i].empty()) continue;  // never updated
        const Shape& shape = parameters()[i]->shape();
        for (auto& [name, tensor] : entries[i]) {
            if (name == "step") {
                NCE_CHECK(tensor.numel() == 1 && tensor.dtype() == Dtype::Int64 && tensor.at(0) >= 1,
                          "{} load_state: entry '{}.step' must be one int64 count >= 1 (got {} {}{})", this->name(), i,
                          dtype_name(tensor.dtype()), shape_string(tensor.shape()),
                          tensor.numel() == 1 ? fmt::format(" holding {}", tensor.at(0)) : "");
                moments[i].step = static_cast<int64_t>(tensor.at(0));
            } else if (name == "exp_avg") {
                moments[i].exp_avg = loaded_tensor(i, name, tensor, shape);
            } else if (name == "exp_avg_sq") {
                moments[i].exp_avg_sq = loaded_tensor(i, name, tensor, shape);
            } else if (name == "max_exp_avg_sq" && options_.amsgrad) {
                moments[i].max_exp_avg_sq = loaded_tensor(i, name, tensor, shape);
            } else {
                fail_unknown_entry(i, name);
            }
        }
        const Moments& m = moments[i];
        NCE_CHECK(m.step >= 1 && m.exp_avg.defined() && m.exp_avg_sq.defined() &&
                      (!options_.amsgrad || m.max_exp_avg_sq.defined()),
                  "{} load_state: parameter {} has only part of its state (it needs step, exp_avg, exp_avg_sq{})",
                  this->name(), i, options_.amsgrad ? " and max_exp_avg_sq" : "");
    }
    moments_ = std::move(moments);
}

}  // namespace nce::nn
