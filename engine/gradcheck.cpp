#include "engine/gradcheck.h"

#include <algorithm>
#include <cmath>

#include "engine/tensor_math.h"

namespace nce {
namespace {

// A float64 evaluation of f carries rounding of about this many units in the last place of
// its output (a generous figure for the small graphs checked here); a central difference
// divides that by 2·eps, and below it no difference quotient can tell two gradients apart.
constexpr double kRoundingUnits = 16;
constexpr double kFloat64Unit = 1.1102230246251565e-16;  // 2^-53

// v · f(inputs), accumulated in double, with gradients off; `magnitude` gets sum |v_i f_i|.
double weighted_output(const CheckedFunction& f, const std::vector<Tensor>& inputs, const std::vector<double>& v,
                       double& magnitude) {
    NoGradGuard no_grad;
    std::vector<Var> vars;
    for (const Tensor& t : inputs) vars.emplace_back(t);
    std::vector<double> y = f(vars).value().to_vector();
    NCE_CHECK(y.size() == v.size(), "gradcheck: output size changed between evaluations");
    double total = 0;
    magnitude = 0;
    for (size_t i = 0; i < y.size(); ++i) {
        total += v[i] * y[i];
        magnitude += std::abs(v[i] * y[i]);
    }
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
    double eps = options.eps > 0 ? options.eps : 1e-6;
    GradcheckResult result;
    result.tolerance = options.tolerance > 0 ? options.tolerance : (single ? kFloat32Tolerance : 1e-6);

    // `inputs` are what the backward under test sees (in `dtype`); `reference` the same
    // values in float64, where the central differences are taken. In float32 a difference
    // quotient is mostly rounding noise: f's rounding, about 6e-8·|f|, divided by 2·eps,
    // swamps the truncation error for every eps. So a float32 backward is held against the
    // float64 central differences of the same function at the same (float32-rounded)
    // point, which agree with the exact derivative to ~1e-10: what is left is the float32
    // backward's own error, rounding (~1e-6 of the gradient's scale) or a mistake (~1).
    std::vector<Tensor> inputs, reference;
    std::vector<bool> differentiable;
    for (size_t i = 0; i < raw_inputs.size(); ++i) {
        const Tensor& t = raw_inputs[i];
        bool floating = is_floating(t.dtype());
        inputs.push_back(floating ? t.to(dtype) : t);
        reference.push_back(floating ? inputs.back().to(Dtype::Float64) : t);
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
    std::vector<double> scales, noises;  // per checked input
    for (size_t i = 0; i < inputs.size(); ++i) {
        if (!differentiable[i]) continue;
        InputReport report;
        report.index = static_cast<int>(i);
        report.shape = inputs[i].shape();
        int64_t input_size = inputs[i].numel();
        report.full_jacobian = (output_size + 1) * input_size <= options.full_jacobian_limit;
        double scale = 0;  // the largest entry of either Jacobian (or directional derivative)
        double noise = 0;  // the largest rounding error of the central differences
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
                Tensor direction = Tensor::from_vector(e, inputs[i].shape(), Dtype::Float64);
                std::vector<double> plus, minus;
                {
                    NoGradGuard no_grad;
                    std::vector<Var> up, down;
                    for (const Tensor& t : perturbed(reference, i, direction, eps)) up.emplace_back(t);
                    for (const Tensor& t : perturbed(reference, i, direction, -eps)) down.emplace_back(t);
                    plus = f(up).value().to_vector();
                    minus = f(down).value().to_vector();
                }
                for (int64_t r = 0; r < output_size; ++r) {
                    report.numeric[r * input_size + c] = (plus[r] - minus[r]) / (2 * eps);
                    noise = std::max(noise, kRoundingUnits * kFloat64Unit * (std::abs(plus[r]) + std::abs(minus[r])) / (2 * eps));
                }
            }
            for (size_t k = 0; k < report.analytic.size(); ++k) {
                double a = report.analytic[k], n = report.numeric[k];
                report.max_abs_error = std::max(report.max_abs_error, std::isnan(a - n) ? INFINITY : std::abs(a - n));
                scale = std::max({scale, std::abs(a), std::abs(n)});
            }
        } else {
            for (int d = 0; d < options.directions; ++d) {
                std::vector<double> v = generator.normal(output_shape, Dtype::Float64).to_vector();
                Tensor u = generator.normal(inputs[i].shape(), dtype).to(Dtype::Float64);
                Tensor g = analytic_gradients(f, inputs, differentiable, v)[i];
                std::vector<double> gv = g.to_vector(), uv = u.to_vector();
                double analytic = 0;
                for (size_t k = 0; k < gv.size(); ++k) analytic += gv[k] * uv[k];
                double plus_magnitude = 0, minus_magnitude = 0;
                double numeric = (weighted_output(f, perturbed(reference, i, u, eps), v, plus_magnitude) -
                                  weighted_output(f, perturbed(reference, i, u, -eps), v, minus_magnitude)) /
                                 (2 * eps);
                noise = std::max(noise, kRoundingUnits * kFloat64Unit * (plus_magnitude + minus_magnitude) / (2 * eps));
                double error = std::abs(analytic - numeric);
                report.max_abs_error = std::max(report.max_abs_error, std::isnan(error) ? INFINITY : error);
                scale = std::max({scale, std::abs(analytic), std::abs(numeric)});
            }
        }
        result.max_abs_error = std::max(result.max_abs_error, report.max_abs_error);
        scales.push_back(scale);
        noises.push_back(noise);
        result.inputs.push_back(std::move(report));
    }
    // The relative error of each input. Its scale is the largest entry of its gradient, but
    // never below what the differences can resolve (noise / tolerance): an input whose
    // gradient is that small is checked to the noise, not to a ratio of two rounding errors.
    // In float32 the backward's own rounding is relative to the largest gradient flowing
    // through the graph, not to one input's: a small gradient made as the difference of large
    // terms keeps their rounding. So there the scale is the largest over all inputs.
    double largest_scale = 0;
    for (double scale : scales) largest_scale = std::max(largest_scale, scale);
    for (size_t k = 0; k < result.inputs.size(); ++k) {
        InputReport& report = result.inputs[k];
        double scale = std::max(single ? largest_scale : scales[k], noises[k] / result.tolerance);
        report.max_rel_error = report.max_abs_error == 0 ? 0 : report.max_abs_error / std::max(scale, 1e-300);
        result.max_rel_error = std::max(result.max_rel_error, report.max_rel_error);
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
