#include "engine/gradcheck.h"

#include <algorithm>
#include <cmath>

#include "engine/tensor_math.h"

namespace nce {
namespace {

// v · f(inputs), accumulated in double, with gradients off.
double weighted_output(const CheckedFunction& f, const std::vector<Tensor>& inputs, const std::vector<double>& v) {
    NoGradGuard no_grad;
    std::vector<Var> vars;
    for (const Tensor& t : inputs) vars.emplace_back(t);
    std::vector<double> y = f(vars).value().to_vector();
    NCE_CHECK(y.size() == v.size(), "gradcheck: output size changed between evaluations");
    double total = 0;
    for (size_t i = 0; i < y.size(); ++i) total += v[i] * y[i];
    return total;
}

// The analytic gradient of v · f with respect to every input (undefined for constants).
std::vector<Tensor> analytic_gradients(const CheckedFunction& f, const std::vector<Tensor>& inputs,
                                       const std::vector<bool>& differentiable, const std::vector<double>& v) {
    std::vector<Var> vars;
    for (size_t i = 0; i < inputs.size(); ++i) vars.emplace_back(inputs[i], static_cast<bool>(differentiable[i]));
    Var out = f(vars);
    std::vector<Tensor> grads(inputs.size());
    if (out.requires_grad()) {
        out.backward(Tensor::from_vector(v, out.shape(), out.dtype()));
        for (size_t i = 0; i < inputs.size(); ++i)
            if (differentiable[i]) grads[i] = vars[i].grad();
    }
    for (size_t i = 0; i < inputs.size(); ++i)
        if (differentiable[i] && !grads[i].defined()) grads[i] = zeros_like(inputs[i]);
    return grads;
}

// Adds step · direction to input `index` (a fresh copy; the originals stay untouched).
std::vector<Tensor> perturbed(const std::vector<Tensor>& inputs, size_t index, const Tensor& direction, double step) {
    std::vector<Tensor> out = inputs;
    out[index] = inputs[index] + direction * step;
    return out;
}

}  // namespace

std::vector<std::string> CheckRegistry::ops() const {
    std::vector<std::string> names;
    for (const CheckCase& c : cases_)
        if (std::find(names.begin(), names.end(), c.op) == names.end()) names.push_back(c.op);
    return names;
}

GradcheckResult gradcheck(const CheckedFunction& f, const std::vector<Tensor>& raw_inputs,
                          const GradcheckOptions& options) {
    Dtype dtype = options.dtype;
    bool single = dtype == Dtype::Float32;
    double eps = options.eps > 0 ? options.eps : (single ? 1e-3 : 1e-6);
    GradcheckResult result;
    result.tolerance = options.tolerance > 0 ? options.tolerance : (single ? 2e-2 : 1e-6);

    std::vector<Tensor> inputs;
    std::vector<bool> differentiable;
    for (size_t i = 0; i < raw_inputs.size(); ++i) {
        const Tensor& t = raw_inputs[i];
        bool floating = is_floating(t.dtype());
        inputs.push_back(floating ? t.to(dtype) : t);
        bool constant = std::find(options.constant_inputs.begin(), options.constant_inputs.end(), static_cast<int>(i)) !=
                        options.constant_inputs.end();
        differentiable.push_back(floating && !constant);
    }

    Shape output_shape;
    int64_t output_size;
    {
        NoGradGuard no_grad;
        std::vector<Var> vars;
        for (const Tensor& t : inputs) vars.emplace_back(t);
        Tensor y = f(vars).value();
        output_shape = y.shape();
        output_size = y.numel();
    }

    Generator generator(options.seed);
    for (size_t i = 0; i < inputs.size(); ++i) {
        if (!differentiable[i]) continue;
        InputReport report;
        report.index = static_cast<int>(i);
        report.shape = inputs[i].shape();
        int64_t input_size = inputs[i].numel();
        report.full_jacobian = (output_size + 1) * input_size <= options.full_jacobian_limit;
        double scale = 0;
        if (report.full_jacobian) {
            // Row r of the analytic Jacobian is the gradient of output element r.
            report.rows = output_size;
            report.columns = input_size;
            report.analytic.assign(output_size * input_size, 0.0);
            report.numeric.assign(output_size * input_size, 0.0);
            for (int64_t r = 0; r < output_size; ++r) {
                std::vector<double> one_hot(output_size, 0.0);
                one_hot[r] = 1.0;
                std::vector<double> g = analytic_gradients(f, inputs, differentiable, one_hot)[i].to_vector();
                for (int64_t c = 0; c < input_size; ++c) report.analytic[r * input_size + c] = g[c];
            }
            // Column c of the numeric Jacobian is the central difference along input element c.
            for (int64_t c = 0; c < input_size; ++c) {
                std::vector<double> e(input_size, 0.0);
                e[c] = 1.0;
                Tensor direction = Tensor::from_vector(e, inputs[i].shape(), dtype);
                std::vector<double> plus, minus;
                {
                    NoGradGuard no_grad;
                    std::vector<Var> up, down;
                    for (const Tensor& t : perturbed(inputs, i, direction, eps)) up.emplace_back(t);
                    for (const Tensor& t : perturbed(inputs, i, direction, -eps)) down.emplace_back(t);
                    plus = f(up).value().to_vector();
                    minus = f(down).value().to_vector();
                }
                for (int64_t r = 0; r < output_size; ++r)
                    report.numeric[r * input_size + c] = (plus[r] - minus[r]) / (2 * eps);
            }
            for (size_t k = 0; k < report.analytic.size(); ++k) {
                double a = report.analytic[k], n = report.numeric[k];
                report.max_abs_error = std::max(report.max_abs_error, std::isnan(a - n) ? INFINITY : std::abs(a - n));
                scale = std::max({scale, std::abs(a), std::abs(n)});
            }
        } else {
            for (int d = 0; d < options.directions; ++d) {
                std::vector<double> v = generator.normal(output_shape, Dtype::Float64).to_vector();
                Tensor u = generator.normal(inputs[i].shape(), dtype);
                Tensor g = analytic_gradients(f, inputs, differentiable, v)[i];
                std::vector<double> gv = g.to_vector(), uv = u.to_vector();
                double analytic = 0;
                for (size_t k = 0; k < gv.size(); ++k) analytic += gv[k] * uv[k];
                double numeric = (weighted_output(f, perturbed(inputs, i, u, eps), v) -
                                  weighted_output(f, perturbed(inputs, i, u, -eps), v)) /
                                 (2 * eps);
                double error = std::abs(analytic - numeric);
                report.max_abs_error = std::max(report.max_abs_error, std::isnan(error) ? INFINITY : error);
                scale = std::max({scale, std::abs(analytic), std::abs(numeric)});
            }
        }
        report.max_rel_error = report.max_abs_error == 0 ? 0 : report.max_abs_error / std::max(scale, 1e-300);
        result.max_abs_error = std::max(result.max_abs_error, report.max_abs_error);
        result.max_rel_error = std::max(result.max_rel_error, report.max_rel_error);
        result.inputs.push_back(std::move(report));
    }
    result.passed = result.max_rel_error <= result.tolerance && std::isfinite(result.max_rel_error);
    return result;
}

GradcheckResult run_check(const CheckCase& check, Dtype dtype, uint64_t seed) {
    Generator generator(seed);
    GradcheckOptions options;
    options.dtype = dtype;
    options.seed = seed;
    options.constant_inputs = check.constant_inputs;
    // Inputs are drawn in float64 and rounded to the dtype, so both dtypes see one problem.
    return gradcheck(check.function, check.make_inputs(generator, Dtype::Float64), options);
}

}  // namespace nce
