#include "engine/checks/checks.h"

namespace nce::checks {
namespace {

using UnaryVarFunction = std::function<Var(const Var&)>;
using InputMaker = std::function<Tensor(Generator&, const Shape&)>;

// Inputs anywhere, inside (0.5, 2) for log, sqrt and pow, and away from relu's kink.
Tensor anywhere(Generator& g, const Shape& shape) { return normal(g, shape); }
Tensor positive(Generator& g, const Shape& shape) { return uniform(g, shape, 0.5, 2.0); }
Tensor off_the_kink(Generator& g, const Shape& shape) { return away_from_zero(g, shape); }

// The op at a matrix and at a 3-D tensor.
void add_unary_cases(CheckRegistry& registry, const std::string& op, const std::string& label,
                     const InputMaker& make_input, const UnaryVarFunction& function) {
    struct Sized {
        const char* description;
        Shape shape;
    };
    for (const Sized& sized : {Sized{"[3,4]", {3, 4}}, Sized{"[2,3,4]", {2, 3, 4}}}) {
        registry.add({op, label + " " + sized.description,
                      [make_input, shape = sized.shape](Generator& g, Dtype) {
                          return std::vector<Tensor>{make_input(g, shape)};
                      },
                      [function](const std::vector<Var>& x) { return function(x[0]); }});
    }
}

}  // namespace

void add_unary_checks(CheckRegistry& registry) {
    add_unary_cases(registry, "exp", "x", anywhere, [](const Var& x) { return exp(x); });
    add_unary_cases(registry, "log", "x in [0.5,2]", positive, [](const Var& x) { return log(x); });
    add_unary_cases(registry, "sqrt", "x in [0.5,2]", positive, [](const Var& x) { return sqrt(x); });
    add_unary_cases(registry, "tanh", "x", anywhere, [](const Var& x) { return tanh(x); });
    add_unary_cases(registry, "sigmoid", "x", anywhere, [](const Var& x) { return sigmoid(x); });
    add_unary_cases(registry, "relu", "|x| >= 0.1", off_the_kink, [](const Var& x) { return relu(x); });
    add_unary_cases(registry, "gelu_erf", "x", anywhere,
                    [](const Var& x) { return gelu(x, GeluApproximation::Erf); });
    add_unary_cases(registry, "gelu_tanh", "x", anywhere,
                    [](const Var& x) { return gelu(x, GeluApproximation::Tanh); });

    // pow with a constant exponent: integer, fractional and negative.
    for (double exponent : {2.0, 3.0, 0.5, -1.5})
        add_unary_cases(registry, "pow", fmt::format("x^{}", exponent), positive,
                        [exponent](const Var& x) { return pow(x, exponent); });

    // pow with a Var exponent, broadcasting: base in [0.5, 2], exponent anywhere.
    struct PowShapes {
        const char* description;
        Shape base, exponent;
    };
    for (const PowShapes& shapes : {PowShapes{"[3,4] ^ [3,4]", {3, 4}, {3, 4}}, PowShapes{"[3,4] ^ [4]", {3, 4}, {4}},
                                    PowShapes{"[3,1] ^ [1,4]", {3, 1}, {1, 4}}, PowShapes{"[2,3] ^ []", {2, 3}, {}},
                                    PowShapes{"[] ^ [2,3]", {}, {2, 3}}}) {
        registry.add({"pow", shapes.description,
                      [shapes](Generator& g, Dtype) {
                          return std::vector<Tensor>{positive(g, shapes.base), normal(g, shapes.exponent)};
                      },
                      [](const std::vector<Var>& x) { return pow(x[0], x[1]); }});
    }
}

}  // namespace nce::checks
