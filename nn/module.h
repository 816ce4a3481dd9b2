// Module: a named collection of parameters and child modules. Names compose with dots into
// the same keys as PyTorch's state_dict ("encoder.layers.0.linear1.weight"), which is how
// checkpoints name tensors.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "engine/nce.h"

namespace nce::nn {

class Module {
public:
    Module() = default;
    virtual ~Module() = default;
    Module(const Module&) = delete;
    Module& operator=(const Module&) = delete;

    // Every parameter below this module, depth first in registration order, with its full name.
    std::vector<std::pair<std::string, Var*>> named_parameters();
    std::vector<Var*> parameters();

    // Training mode turns dropout on; eval mode (train(false)) turns it off. Recursive.
    void train(bool on = true);
    bool training() const { return training_; }

    void zero_grad();

    // Moves every parameter's value to `device` (a copy; the same Var, so optimizers and
    // names still see it) and clears its gradient, which belonged to the old device.
    // Inputs must then be made on that device too.
    void to(Device device);

protected:
    // The Var must be a member of the derived module (its address stays fixed).
    void register_parameter(std::string name, Var& parameter);
    void register_module(std::string name, Module& child);

private:
    std::vector<std::pair<std::string, Var*>> parameters_;
    std::vector<std::pair<std::string, Module*>> children_;
    bool training_ = true;
};

}  // namespace nce::nn
