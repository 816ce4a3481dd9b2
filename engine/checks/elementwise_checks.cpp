#include "engine/checks/checks.h"

namespace nce::checks {
namespace {

// Two operand shapes: equal, a trailing vector, an outer product, a middle axis, and a
// scalar-shaped [] on either side.
struct BinaryShapes {
    const char* description;
    Shape a, b;
};

const BinaryShapes kBroadcastShapes[] = {
    {"[3,4] and [3,4]", {3, 4}, {3, 4}},
    {"[3,4] and [4]", {3, 4}, {4}},
    {"[3,1] and [1,4]", {3, 1}, {1, 4}},
    {"[2,3,4] and [3,1]", {2, 3, 4}, {3, 1}},
    {"[] and [2,3]", {}, {2, 3}},
    {"[2,3] and []", {2, 3}, {}},
};

using BinaryVarOp = Var (*)(const Var&, const Var&);

// One case per shape pair. With right_away_from_zero the right operand stays at least 0.5
// away from 0 (div's denominator).
void add_binary_cases(CheckRegistry& registry, const char* op, BinaryVarOp function, bool right_away_from_zero) {
    for (const BinaryShapes& shapes : kBroadcastShapes) {
        registry.add({op, shapes.description,
                      [shapes, right_away_from_zero](Generator& g, Dtype) {
                          Tensor b = right_away_from_zero ? away_from_zero(g, shapes.b, 0.5) : normal(g, shapes.b);
                          return std::vector<Tensor>{normal(g, shapes.a), b};
                      },
                      [function](const std::vector<Var>& x) { return function(x[0], x[1]); }});
    }
}

}  // namespace

void add_elementwise_checks(CheckRegistry& registry) {
    add_binary_cases(registry, "add", static_cast<BinaryVarOp>(add), false);
    add_binary_cases(registry, "sub", static_cast<BinaryVarOp>(sub), false);
    add_binary_cases(registry, "mul", static_cast<BinaryVarOp>(mul), false);
    add_binary_cases(registry, "div", static_cast<BinaryVarOp>(div), true);

    struct Sized {
        std::string description;
        Shape shape;
    };
    for (const Sized& sized : {Sized{"[3,4]", {3, 4}}, Sized{"[2,3,4]", {2, 3, 4}}, Sized{"[]", {}}}) {
        const std::string& description = sized.description;
        const Shape& shape = sized.shape;
        registry.add({"neg", description,
                      [shape](Generator& g, Dtype) { return std::vector<Tensor>{normal(g, shape)}; },
                      [](const std::vector<Var>& x) { return neg(x[0]); }});
        registry.add({"add_scalar", description + " + 1.5",
                      [shape](Generator& g, Dtype) { return std::vector<Tensor>{normal(g, shape)}; },
                      [](const std::vector<Var>& x) { return add_scalar(x[0], 1.5); }});
        registry.add({"mul_scalar", description + " · -2.5",
                      [shape](Generator& g, Dtype) { return std::vector<Tensor>{normal(g, shape)}; },
                      [](const std::vector<Var>& x) { return mul_scalar(x[0], -2.5); }});
    }
    // The operators with a scalar on the left, which compose two ops.
    registry.add({"add_scalar", "2 - [3,4] (operator)",
                  [](Generator& g, Dtype) { return std::vector<Tensor>{normal(g, {3, 4})}; },
                  [](const std::vector<Var>& x) { return 2.0 - x[0]; }});
    registry.add({"mul_scalar", "[3,4] / 4 (operator)",
                  [](Generator& g, Dtype) { return std::vector<Tensor>{normal(g, {3, 4})}; },
                  [](const std::vector<Var>& x) { return x[0] / 4.0; }});
}

}  // namespace nce::checks
