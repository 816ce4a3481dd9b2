#include "losses/smooth_l1.h"

#include <cmath>

#include "losses/loss_common.h"
#include "losses/worked_example.h"

namespace nce::losses {
namespace {

// Each entry of x limited to [low, high].
Tensor clamp(const Tensor& x, double low, double high) {
    return binary_scalar(BinaryOp::Maximum, binary_scalar(BinaryOp::Minimum, x, high), low);
}

void check_smooth_l1_inputs(const Var& pred, const Var& target, double beta) {
    check_matrix(pred, "smooth_l1", "pred");
    check_matrix(target, "smooth_l1", "target");
    check_same_shape(pred, target, "smooth_l1", "pred", "target");
    NCE_CHECK(pred.dtype() == target.dtype(), "smooth_l1: pred ({}) and target ({}) must have the same dtype",
              dtype_name(pred.dtype()), dtype_name(target.dtype()));
    check_min_rows(pred.size(0), 1, "smooth_l1", "N (rows of pred)");
    check_min_rows(pred.size(1), 1, "smooth_l1", "d (columns of pred)");
    NCE_CHECK(beta > 0 && std::isfinite(beta), "smooth_l1: parameter beta must be > 0, got {}", beta);
}

}  // namespace

// Smooth L1.     pred, target: [N, d]     e = pred - target: [N, d]
//   h(e) = 0.5 e^2 / beta   if |e| < beta     (a parabola around 0)
//          |e| - 0.5 beta   otherwise         (a line with the parabola's slope, ±1, at |e| = beta)
//   L = (1/(N d)) sum_ij h(e_ij)
//
// Forward, with c = clamp(e, -beta, beta):  h(e) = 0.5 c^2 / beta + (|e| - |c|).
//   Inside the band c = e and the bracket is 0; outside |c| = beta, so h = |e| - 0.5 beta.
//   c stays within beta, so unlike e^2, c^2 cannot overflow for huge errors.
//
// Backward: h'(e) = e / beta inside the band and sign(e) outside; both are c / beta.
//   dL/de      = c / (beta N d)             [N, d]
//   dL/dpred   =  dL/de                     (de/dpred = 1)
//   dL/dtarget = -dL/de                     (de/dtarget = -1)
Var smooth_l1(const Var& pred, const Var& target, double beta) {
    check_smooth_l1_inputs(pred, target, beta);
    Tensor error = pred.value() - target.value();                      // e  [N, d]
    Tensor clamped = clamp(error, -beta, beta);                         // c  [N, d]
    Tensor h = square(clamped) * (0.5 / beta) + (abs(error) - abs(clamped));
    Tensor loss = mean(h);                                              // []
    double elements = static_cast<double>(error.numel());              // N d
    return Var::from_op("smooth_l1", std::move(loss), {pred, target},
        [clamped, beta, elements](const Tensor& dy) -> Grads {
            Tensor dpred = clamped * (dy.item() / (beta * elements));  // [N, d]
            return {dpred, -dpred};
        });
}

LossDefinition smooth_l1_definition() {
    LossDefinition loss;
    loss.name = "smooth_l1";
    loss.inputs = {{"pred", InputKind::Embedding}, {"target", InputKind::Embedding}};
    loss.params = {{"beta", "1.0", ParamRule::Positive, {}}};
    loss.compute = [](const LossArguments& arguments) {
        return smooth_l1(arguments.input("pred"), arguments.input("target"), arguments.number("beta"));
    };
    // target is standard normal; each error e = pred - target has |e| in [0, 0.9) or
    // [1.1, 3.1) with a random sign, so both pieces of h appear and none sits at the joint
    // |e| = beta of the default beta = 1.
    loss.example = [](Generator& generator, int64_t rows, int64_t dim) {
        Tensor target = generator.normal({rows, dim}, Dtype::Float64);
        std::vector<double> errors(static_cast<size_t>(rows * dim));
        for (double& error : errors) {
            bool inside = generator.next_uniform() < 0.5;
            double size = inside ? 0.9 * generator.next_uniform() : 1.1 + 2.0 * generator.next_uniform();
            error = generator.next_uniform() < 0.5 ? -size : size;
        }
        Tensor pred = target + Tensor::from_vector(errors, {rows, dim}, Dtype::Float64);
        return std::map<std::string, Tensor>{{"pred", pred}, {"target", target}};
    };
    // The page's example: the default beta 1; errors e = (0.5, -2; 1.5, -0.2), two inside the
    // band |e| < 1 (the parabola) and two outside (the line), one of each sign.
    loss.worked_example = [] {
        WorkedExample example;
        example.inputs = {{"pred", matrix({{0.7, -1.0}, {1.0, 0.1}})},
                          {"target", matrix({{0.2, 1.0}, {-0.5, 0.3}})}};
        example.steps = [](const LossArguments& arguments) {
            Tensor pred = arguments.input("pred").value(), target = arguments.input("target").value();
            double beta = arguments.number("beta");
            double elements = static_cast<double>(pred.numel());                            // N d
            Tensor e = pred - target;                                                       // [N, d]
            Tensor inside = step(beta - abs(e));                                            // [N, d]
            Tensor outside = 1.0 - inside;                                                  // [N, d]
            Tensor sign = step(e) - step(-e);                                               // [N, d]
            Tensor h = inside * square(e) * (0.5 / beta) + outside * (abs(e) - 0.5 * beta);  // [N, d]
            Tensor slope = inside * e / beta + outside * sign;                               // h'(e)  [N, d]
            return std::vector<DerivationStep>{
                {"e", "pred - target", e},
                {"inside", "1 where |e| < beta, else 0", inside},
                {"h", "0.5 e^2 / beta inside, |e| - 0.5 beta outside", h},
                {"h'(e)", "e / beta inside, sign(e) outside", slope},
                {"c / beta", "clamp(e, -beta, beta) / beta: the same numbers, as the code forms them",
                 clamp(e, -beta, beta) / beta},
                {"dpred", "h'(e) / (N d)", slope / elements},
                {"dtarget", "-h'(e) / (N d)", -slope / elements}};
        };
        return example;
    };
    return loss;
}

}  // namespace nce::losses
