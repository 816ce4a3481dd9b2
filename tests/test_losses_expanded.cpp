// The op-by-op InfoNCE losses (losses/infonce_expanded.h) that `nce graph --expanded` draws:
// the same loss and gradients as the fused ones, and a graph whose nodes are the engine ops
// of the derivation.
#include <cmath>

#include "losses/infonce_expanded.h"
#include "losses/losses.h"
#include "losses/random_inputs.h"
#include "losses/worked_example.h"
#include "tests/loss_test_helpers.h"
#include "tests/test_helpers.h"

using namespace nce;
using namespace nce::testing;

namespace expanded_tests {

using InfonceFunction = Var (*)(const Var&, const Var&, const Var&, const Var&, double);

// q, p [N, d], negatives [M, d] (M = 0: none), a learnable tau (log_tau an input) or a fixed one.
LossFunction bind(InfonceFunction loss, bool has_negatives, bool learnable, double tau) {
    return [=](const std::vector<Var>& inputs) {
        Var negatives = has_negatives ? inputs[2] : Var();
        Var log_tau = learnable ? inputs.back() : Var();
        return loss(inputs[0], inputs[1], negatives, log_tau, tau);
    };
}


TEST_CASE("infonce_expanded and infonce_symmetric_expanded: the fused losses' values and gradients") {
    Generator generator(7);
    for (auto [fused, expanded] : {std::pair<InfonceFunction, InfonceFunction>{losses::infonce, losses::infonce_expanded},
                                   {losses::infonce_symmetric, losses::infonce_symmetric_expanded}}) {
        for (int64_t M : {0, 2}) {
            for (bool learnable : {false, true}) {
                int64_t N = 3, d = 4;
                double tau = 0.2;
                std::vector<Tensor> inputs{losses::random_unit_rows(generator, N, d),
                                           losses::random_unit_rows(generator, N, d)};
                if (M > 0) inputs.push_back(losses::random_unit_rows(generator, M, d));
                if (learnable) inputs.push_back(Tensor::scalar(std::log(tau), Dtype::Float64));
                LossAndGrads hand = evaluate_loss(bind(fused, M > 0, learnable, tau), inputs);
                LossAndGrads ops = evaluate_loss(bind(expanded, M > 0, learnable, tau), inputs);
                CAPTURE(M);
                CAPTURE(learnable);
                CHECK(std::abs(hand.loss.item() - ops.loss.item()) < 1e-12);
                for (size_t k = 0; k < inputs.size(); ++k) CHECK(allclose(hand.grads[k], ops.grads[k], 1e-10, 1e-12));
            }
        }
    }
}

TEST_CASE("infonce_expanded: its graph is the derivation's ops; registered for infonce and infonce_symmetric") {
    Var q = Var::parameter(losses::identity(2) * 0.5), p = Var::parameter(losses::identity(2));
    Var log_tau = Var::parameter(Tensor::scalar(std::log(0.5), Dtype::Float64));
    std::string dot = to_dot(losses::infonce_expanded(q, p, Var(), log_tau));
    for (const char* op : {"matmul", "exp", "div", "log_softmax", "mul", "sum", "mul_scalar"}) {
        bool drawn = dot.find(std::string("label=\"") + op + "\\n") != std::string::npos;
        CHECK_MESSAGE(drawn, op);
    }
    CHECK(dot.find("infonce") == std::string::npos);  // no fused node
    CHECK(losses::find_expanded_loss("infonce") != nullptr);
    CHECK(losses::find_expanded_loss("infonce_symmetric") != nullptr);
    CHECK(losses::find_expanded_loss("triplet") == nullptr);
    for (const std::string& name : losses::expanded_loss_names()) CHECK(losses::find_expanded_loss(name) != nullptr);
}

}  // namespace expanded_tests
