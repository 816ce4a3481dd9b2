#include "nn/module.h"

namespace nce::nn {

std::vector<std::pair<std::string, Var*>> Module::named_parameters() {
    std::vector<std::pair<std::string, Var*>> out = parameters_;
    for (auto& [name, child] : children_)
        for (auto& [child_name, parameter] : child->named_parameters()) out.emplace_back(name + "." + child_name, parameter);
    return out;
}

std::vector<Var*> Module::parameters() {
    std::vector<Var*> out;
    for (auto& [name, parameter] : named_parameters()) out.push_back(parameter);
    return out;
}

void Module::train(bool on) {
    training_ = on;
    for (auto& [name, child] : children_) child->train(on);
}

void Module::zero_grad() {
    for (Var* parameter : parameters()) parameter->zero_grad();
}

void Module::to(Device device) {
    for (Var* parameter : parameters()) {
        parameter->zero_grad();
        if (parameter->value().device() != device) parameter->set_value(parameter->value().to(device));
    }
}

void Module::register_parameter(std::string name, Var& parameter) {
    for (auto& [existing, unused] : parameters_)
        NCE_CHECK(existing != name, "module: parameter '{}' registered twice", name);
    parameters_.emplace_back(std::move(name), &parameter);
}

void Module::register_module(std::string name, Module& child) { children_.emplace_back(std::move(name), &child); }

}  // namespace nce::nn
