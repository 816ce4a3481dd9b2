#include "engine/checks/checks.h"

#include <utility>

namespace nce::checks {
namespace {

// The values 0, 0.25, 0.5, ... in a random order, shifted to be centred on 0: no two are
// closer than 0.25, so a finite-difference step never changes which one is the maximum.
Tensor distinct_values(Generator& g, const Shape& shape) {
    int64_t count = shape_numel(shape);
    std::vector<double> values(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) values[i] = 0.25 * static_cast<double>(i - count / 2);
    for (int64_t i = count - 1; i > 0; --i) std::swap(values[i], values[g.next_index(i + 1)]);  // Fisher-Yates
    return Tensor::from_vector(values, shape, Dtype::Float64);
}

// How a case reduces: along an axis (with or without keepdim) or over all elements.
struct Reduction {
    const char* description;
    Shape shape;
    int64_t axis;  // ignored when all_elements
    bool keepdim;
    bool all_elements;
};

const Reduction kReductions[] = {
    {"[3,4] axis 0", {3, 4}, 0, false, false},
    {"[3,4] axis -1", {3, 4}, -1, false, false},
    {"[3,4] axis 1 keepdim", {3, 4}, 1, true, false},
    {"[2,3,4] axis 1", {2, 3, 4}, 1, false, false},
    {"[2,3,4] axis 0 keepdim", {2, 3, 4}, 0, true, false},
    {"[2,3,4] axis 2 keepdim", {2, 3, 4}, 2, true, false},
    {"[5] axis 0", {5}, 0, false, false},
    {"[3,4] all elements", {3, 4}, 0, false, true},
    {"[2,3,4] all elements", {2, 3, 4}, 0, false, true},
    {"[] all elements", {}, 0, false, true},
};

using AxisReduction = Var (*)(const Var&, int64_t, bool);
using AllReduction = Var (*)(const Var&);

void add_reduction_cases(CheckRegistry& registry, const char* op, AxisReduction along_axis,
                         AllReduction all_elements, bool distinct_inputs) {
    for (const Reduction& r : kReductions) {
        registry.add({op, r.description,
                      [r, distinct_inputs](Generator& g, Dtype) {
                          Tensor x = distinct_inputs ? distinct_values(g, r.shape) : normal(g, r.shape);
                          return std::vector<Tensor>{x};
                      },
                      [r, along_axis, all_elements](const std::vector<Var>& x) {
                          return r.all_elements ? all_elements(x[0]) : along_axis(x[0], r.axis, r.keepdim);
                      }});
    }
}

}  // namespace

void add_reduce_checks(CheckRegistry& registry) {
    add_reduction_cases(registry, "sum", static_cast<AxisReduction>(sum), static_cast<AllReduction>(sum), false);
    add_reduction_cases(registry, "mean", static_cast<AxisReduction>(mean), static_cast<AllReduction>(mean), false);
    // max: inputs with no near-ties, so the argmax is the same at x ± eps.
    add_reduction_cases(registry, "max", static_cast<AxisReduction>(max), static_cast<AllReduction>(max), true);
}

}  // namespace nce::checks
