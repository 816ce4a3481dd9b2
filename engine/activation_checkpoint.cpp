#include "engine/activation_checkpoint.h"

#include <utility>

namespace nce {
namespace {

// While alive, each parameter Var is a fresh leaf holding the value it had in the forward;
// on destruction the original Vars (with their gradient slots) are put back.
class FreshParameterLeaves {
public:
    FreshParameterLeaves(const std::vector<Var*>& parameters, const std::vector<Tensor>& forward_values)
        : parameters_(parameters) {
        for (size_t i = 0; i < parameters_.size(); ++i) {
            originals_.push_back(*parameters_[i]);
            *parameters_[i] = Var(forward_values[i], originals_[i].requires_grad());
            leaves_.push_back(*parameters_[i]);  // shares the leaf's node, so its grad() is read here
        }
    }
    ~FreshParameterLeaves() {
        for (size_t i = 0; i < parameters_.size(); ++i) *parameters_[i] = std::move(originals_[i]);
    }
    FreshParameterLeaves(const FreshParameterLeaves&) = delete;
    FreshParameterLeaves& operator=(const FreshParameterLeaves&) = delete;

    const std::vector<Var>& leaves() const { return leaves_; }

private:
    std::vector<Var*> parameters_;
    std::vector<Var> originals_;
    std::vector<Var> leaves_;
};

// While alive, the generator stands at `offset`; on destruction it goes back to where it was.
class ReplayedGenerator {
public:
    ReplayedGenerator(Generator* generator, uint64_t offset)
        : generator_(generator), resume_at_(generator ? generator->offset() : 0) {
        if (generator_) generator_->set_offset(offset);
    }
    ~ReplayedGenerator() {
        if (generator_) generator_->set_offset(resume_at_);
    }
    ReplayedGenerator(const ReplayedGenerator&) = delete;
    ReplayedGenerator& operator=(const ReplayedGenerator&) = delete;

private:
    Generator* generator_;
    uint64_t resume_at_;
};

}  // namespace

Var checkpoint(const CheckpointedFunction& function, const Var& input, const std::vector<Var*>& parameters,
               Generator* generator) {
    bool needs_graph = input.requires_grad();
    for (const Var* parameter : parameters) needs_graph = needs_graph || parameter->requires_grad();
    if (!grad_enabled() || !needs_graph) return function(input);

    // The forward, with no graph: its intermediates are freed as it goes.
    const uint64_t draws_start = generator ? generator->offset() : 0;
    Var output;
    {
        NoGradGuard no_graph;
        output = function(input);
    }
    const uint64_t draws_end = generator ? generator->offset() : 0;

    // The node's inputs: x, then every parameter, so that their gradients flow through the
    // backward engine exactly as from a plain graph's nodes.
    std::vector<Var> node_inputs{input};
    std::vector<Tensor> parameter_values;  // the forward's values (shared storage, not copies)
    for (const Var* parameter : parameters) {
        node_inputs.push_back(*parameter);
        parameter_values.push_back(parameter->value());
    }

    return Var::from_op(
        "checkpoint", output.value(), node_inputs,
        [function, parameters, parameter_values, generator, draws_start, draws_end, input_value = input.value(),
         input_needs_grad = input.requires_grad()](const Tensor& output_grad) -> Grads {
            NCE_CHECK(grad_enabled(),
                      "checkpoint: the backward runs under NoGradGuard, but a checkpointed block recomputes its "
                      "graph there; run backward() with gradients on");
            FreshParameterLeaves fresh_parameters(parameters, parameter_values);
            ReplayedGenerator replay(generator, draws_start);
            Var fresh_input(input_value, input_needs_grad);

            Var recomputed = function(fresh_input);  // the same values as the forward's output
            NCE_CHECK(generator == nullptr || generator->offset() == draws_end,
                      "checkpoint: the recomputation drew {} random values where the forward drew {}; a "
                      "checkpointed function must draw the same values each time it runs",
                      generator ? generator->offset() - draws_start : 0, draws_end - draws_start);
            recomputed.backward(output_grad);

            Grads input_grads{fresh_input.grad()};  // undefined where no gradient reached
            for (const Var& leaf : fresh_parameters.leaves()) input_grads.push_back(leaf.grad());
            return input_grads;
        });
}

}  // namespace nce
