#include "nn/clip_grad_norm.h"

#include <cmath>

namespace nce::nn {

double clip_grad_norm(const std::vector<Var*>& parameters, double max_norm) {
    NCE_CHECK(std::isfinite(max_norm) && max_norm > 0,
              "clip_grad_norm: max_norm {} must be a finite number > 0 (the largest gradient norm to allow)", max_norm);
    double sum_of_squares = 0;
    for (size_t i = 0; i < parameters.size(); ++i) {
        NCE_CHECK(parameters[i] != nullptr, "clip_grad_norm: parameter {} is a null pointer", i);
        Tensor grad = parameters[i]->grad();
        if (grad.defined()) sum_of_squares += sum(square(grad)).item();  // ||grad||²
    }
    const double total_norm = std::sqrt(sum_of_squares);
    if (!std::isfinite(total_norm)) return total_norm;  // the caller decides; the gradients stay as they are

    const double clip_coef = max_norm / (total_norm + 1e-6);
    if (clip_coef >= 1) return total_norm;  // scaling by min(clip_coef, 1) = 1 changes nothing
    for (Var* parameter : parameters) {
        Tensor grad = parameter->grad();
        if (grad.defined()) parameter->set_grad(grad * clip_coef);
    }
    return total_norm;
}

}  // namespace nce::nn
