// Gradient checking by central finite differences.
//
// For f: inputs -> output (any shape), the analytic Jacobian comes from backward() and the
// numeric one from  (f(x + eps e) - f(x - eps e)) / (2 eps). Small problems compare the full
// Jacobians entry by entry; larger ones compare random directional derivatives v^T J u for
// a few random u (input direction) and v (output weights).
//
// Errors are reported per differentiable input: max_abs_error is the largest |analytic -
// numeric|; max_rel_error divides it by the largest |entry| of the two Jacobians (or
// directional derivatives) being compared, so it reads as "error relative to the scale of
// the gradient" and is not blown up by entries that are zero. The scale is never taken below
// noise / tolerance, where noise bounds the central differences' own rounding (16 units of
// f's last place over 2·eps): a gradient that small is checked to the noise.
//
// In float32 the backward under test runs in float32, but the central differences are taken
// in float64 at the same float32-rounded point (a float32 difference quotient is rounding
// noise, not a reference): a right float32 backward then differs from the reference only by
// its own rounding, and the float32 tolerance can be tight enough to catch a wrong one. That
// rounding is relative to the largest gradient in the graph, so in float32 every input's
// error is divided by the largest scale over all inputs.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "engine/autograd.h"
#include "engine/random.h"

namespace nce {

using CheckedFunction = std::function<Var(const std::vector<Var>&)>;

// The float32 tolerance on max_rel_error: a float32 backward's rounding against float64
// central differences (measured: at most 8e-6 over every registered check, encoders included,
// seeds 1 to 16, one and two threads) with room to spare; a backward off by a factor of 1e-3
// fails it, and a wrong term gives ~1e-1 and more.
inline constexpr double kFloat32Tolerance = 1e-4;

struct GradcheckOptions {
    Dtype dtype = Dtype::Float64;  // the dtype the function and its backward run in
    double eps = 0;                // 0: 1e-6 (the central differences are always taken in float64)
    double tolerance = 0;          // on max_rel_error; 0: 1e-6 in float64, kFloat32Tolerance in float32
    // Full Jacobians when (output elements + 1) · (input elements) is at most this.
    int64_t full_jacobian_limit = 4096;
    int directions = 3;  // random directions per input otherwise
    uint64_t seed = 1;
    // Inputs (by index) held constant: no gradient is checked for them. int64 inputs are
    // always constant.
    std::vector<int> constant_inputs;
};

struct InputReport {
    int index = 0;
    Shape shape;
    bool full_jacobian = false;
    double max_abs_error = 0;
    double max_rel_error = 0;
    // Filled for full Jacobians: [output elements][input elements], row-major.
    std::vector<double> analytic, numeric;
    int64_t rows = 0, columns = 0;
};

struct GradcheckResult {
    std::vector<InputReport> inputs;
    double max_abs_error = 0;
    double max_rel_error = 0;
    double tolerance = 0;
    bool passed = false;
};

// Inputs are given in any float dtype and converted to options.dtype (int64 stay int64).
GradcheckResult gradcheck(const CheckedFunction& f, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options = {});

// One op's check at one set of shapes: what `nce gradcheck` and the tests run.
struct CheckCase {
    std::string op;           // the op's name: `nce gradcheck NAME` selects by it
    std::string description;  // inputs and shapes, e.g. "[3,4] · [4,5]^T"
    std::function<std::vector<Tensor>(Generator&, Dtype)> make_inputs;
    CheckedFunction function;
    std::vector<int> constant_inputs;  // float inputs that get no gradient (masks)
};

class CheckRegistry {
public:
    void add(CheckCase check) { cases_.push_back(std::move(check)); }
    const std::vector<CheckCase>& cases() const { return cases_; }
    std::vector<std::string> ops() const;  // distinct op names, in registration order

private:
    std::vector<CheckCase> cases_;
};

// Runs a registered case at a dtype and seed.
GradcheckResult run_check(const CheckCase& check, Dtype dtype, uint64_t seed);

// Every engine op's cases (engine/checks/).
void register_engine_checks(CheckRegistry& registry);

}  // namespace nce
