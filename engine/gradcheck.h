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
// the gradient" and is not blown up by entries that are zero.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "engine/autograd.h"
#include "engine/random.h"

namespace nce {

using CheckedFunction = std::function<Var(const std::vector<Var>&)>;

struct GradcheckOptions {
    Dtype dtype = Dtype::Float64;
    double eps = 0;        // 0: 1e-6 in float64, 1e-3 in float32
    double tolerance = 0;  // on max_rel_error; 0: 1e-6 in float64, 2e-2 in float32
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
