// Optimizers, gradient clipping and learning-rate schedules (nn/optimizer.h,
// nn/clip_grad_norm.h, nn/schedule.h).
//
// The optimizer and clipping numbers are PyTorch's: tests/fixtures/make_optimizer_reference.py
// runs torch.optim and clip_grad_norm_ in float64 on a small problem and writes the results
// into tests/fixtures/optimizer_reference/optimizer_reference.h; here the same problem runs
// through the engine's ops and nn/'s optimizers and must agree to 1e-12.
#include <cmath>
#include <limits>
#include <memory>
#include <numbers>
#include <set>

#include "nn/adam_update.h"
#include "nn/clip_grad_norm.h"
#include "nn/optimizer.h"
#include "nn/schedule.h"
#include "tests/fixtures/optimizer_reference/optimizer_reference.h"
#include "tests/test_helpers.h"

using namespace nce;
namespace reference = optimizer_reference;

namespace {

std::vector<double> values_of(const double* begin, int count) { return std::vector<double>(begin, begin + count); }

// The reference problem: loss = sum((x W + b - y)²) with W [2, 3] and b [3] as parameters.
struct Problem {
    Var W, b;

    explicit Problem(Dtype dtype = Dtype::Float64)
        : W(Var::parameter(Tensor::from_vector(values_of(reference::initial_W, 6), {2, 3}, dtype))),
          b(Var::parameter(Tensor::from_vector(values_of(reference::initial_b, 3), {3}, dtype))) {}

    std::vector<Var*> parameters() { return {&W, &b}; }

    // Accumulates the loss's gradient into W and b.
    void backward() {
        Dtype dtype = W.dtype();
        Var x(Tensor::from_vector(values_of(reference::x, 8), {4, 2}, dtype));  // [4, 2]
        Var y(Tensor::from_vector(values_of(reference::y, 12), {4, 3}, dtype));  // [4, 3]
        Var residual = matmul(x, W) + b - y;  // [4, 3]
        sum(residual * residual).backward();
    }

    // W's 6 values, then b's 3: the layout of the reference's rows.
    std::vector<double> values() const {
        std::vector<double> out = W.value().to_vector();
        for (double v : b.value().to_vector()) out.push_back(v);
        return out;
    }
};

std::unique_ptr<nn::Optimizer> make_optimizer(const reference::Run& run, std::vector<Var*> parameters) {
    std::string kind = run.kind;
    if (kind == "SGD")
        return std::make_unique<nn::SGD>(parameters, nn::SGDOptions{.learning_rate = run.lr,
                                                                     .momentum = run.momentum,
                                                                     .dampening = run.dampening,
                                                                     .weight_decay = run.weight_decay,
                                                                     .nesterov = run.nesterov});
    if (kind == "Adam")
        return std::make_unique<nn::Adam>(parameters, nn::AdamOptions{.learning_rate = run.lr,
                                                                       .beta1 = run.beta1,
                                                                       .beta2 = run.beta2,
                                                                       .eps = run.eps,
                                                                       .weight_decay = run.weight_decay,
                                                                       .amsgrad = run.amsgrad});
    REQUIRE(kind == "AdamW");
    return std::make_unique<nn::AdamW>(parameters, nn::AdamWOptions{.learning_rate = run.lr,
                                                                     .beta1 = run.beta1,
                                                                     .beta2 = run.beta2,
                                                                     .eps = run.eps,
                                                                     .weight_decay = run.weight_decay,
                                                                     .amsgrad = run.amsgrad});
}

// One training step of the reference script: fresh gradients (b's dropped on the run's skip
// steps, as the script sets b.grad = None), then the optimizer's step. `step` counts from 1.
void train_step(Problem& problem, nn::Optimizer& optimizer, const reference::Run& run, int step) {
    optimizer.zero_grad();
    problem.backward();
    if (step == run.skip_b_on[0] || step == run.skip_b_on[1]) problem.b.zero_grad();
    optimizer.step();
}

double max_difference(const std::vector<double>& computed, const double* expected) {
    double worst = 0;
    for (size_t i = 0; i < computed.size(); ++i) worst = std::max(worst, std::abs(computed[i] - expected[i]));
    return worst;
}

bool same_state(const nn::OptimizerState& a, const nn::OptimizerState& b) {
    if (a.step_count != b.step_count || a.tensors.size() != b.tensors.size()) return false;
    for (auto& [key, tensor] : a.tensors) {
        auto it = b.tensors.find(key);
        if (it == b.tensors.end() || it->second.shape() != tensor.shape() ||
            it->second.to_vector() != tensor.to_vector())
            return false;
    }
    return true;
}

std::set<std::string> keys_of(const nn::OptimizerState& state) {
    std::set<std::string> keys;
    for (auto& [key, tensor] : state.tensors) keys.insert(key);
    return keys;
}

Tensor f64(std::vector<double> values, Shape shape) { return Tensor::from_vector(values, shape, Dtype::Float64); }

}  // namespace

// ---- optimizers against PyTorch ----

TEST_CASE("optimizer: SGD, Adam and AdamW take PyTorch's steps, to 1e-12 over 5 steps") {
    for (const reference::Run& run : reference::runs) {
        CAPTURE(run.name);
        Problem problem;
        auto optimizer = make_optimizer(run, problem.parameters());
        for (int step = 1; step <= reference::steps; ++step) {
            CAPTURE(step);
            train_step(problem, *optimizer, run, step);
            CHECK(max_difference(problem.values(), run.after[step - 1]) < 1e-12);
        }
        CHECK(optimizer->step_count() == reference::steps);
    }
}

TEST_CASE("optimizer: float32 parameters follow the same trajectory to float32 precision") {
    for (const reference::Run& run : reference::runs) {
        CAPTURE(run.name);
        Problem problem(Dtype::Float32);
        auto optimizer = make_optimizer(run, problem.parameters());
        for (int step = 1; step <= reference::steps; ++step) {
            train_step(problem, *optimizer, run, step);
            CHECK(problem.W.dtype() == Dtype::Float32);
            CHECK(max_difference(problem.values(), run.after[step - 1]) < 1e-5);
        }
    }
}

TEST_CASE("optimizer: defaults are PyTorch's") {
    nn::AdamOptions adam;
    CHECK(adam.learning_rate == 1e-3);
    CHECK(adam.beta1 == 0.9);
    CHECK(adam.beta2 == 0.999);
    CHECK(adam.eps == 1e-8);
    CHECK(adam.weight_decay == 0.0);
    CHECK_FALSE(adam.amsgrad);
    nn::AdamWOptions adamw;
    CHECK(adamw.learning_rate == 1e-3);
    CHECK(adamw.weight_decay == 0.01);
    nn::SGDOptions sgd;
    CHECK(std::isnan(sgd.learning_rate));  // required, as in PyTorch
    CHECK(sgd.momentum == 0.0);
    CHECK(sgd.dampening == 0.0);
    CHECK(sgd.weight_decay == 0.0);
    CHECK_FALSE(sgd.nesterov);
}

TEST_CASE("optimizer: SGD's step is p - lr·g at the learning rate set last") {
    Problem problem;
    nn::SGD sgd(problem.parameters(), {.learning_rate = 0.1});
    sgd.set_learning_rate(0.25);
    CHECK(sgd.learning_rate() == 0.25);
    problem.backward();
    std::vector<double> before = problem.values();
    std::vector<double> grad = problem.W.grad().to_vector();
    for (double g : problem.b.grad().to_vector()) grad.push_back(g);
    sgd.step();
    std::vector<double> after = problem.values();
    for (size_t i = 0; i < after.size(); ++i) CHECK(after[i] == doctest::Approx(before[i] - 0.25 * grad[i]).epsilon(1e-15));
}

TEST_CASE("optimizer: a parameter without a gradient is left alone and gets no state") {
    Problem problem;
    nn::SGD sgd(problem.parameters(), {.learning_rate = 0.1, .momentum = 0.9});
    problem.backward();
    problem.b.zero_grad();
    std::vector<double> b_before = problem.b.value().to_vector();
    std::vector<double> W_before = problem.W.value().to_vector();
    sgd.step();
    CHECK(problem.b.value().to_vector() == b_before);
    CHECK(problem.W.value().to_vector() != W_before);
    CHECK(keys_of(sgd.state()) == std::set<std::string>{"0.momentum_buffer"});
    CHECK(sgd.step_count() == 1);

    sgd.zero_grad();
    CHECK_FALSE(problem.W.grad().defined());
    CHECK_FALSE(problem.b.grad().defined());
    std::vector<double> W_after_one = problem.W.value().to_vector();
    sgd.step();  // no gradients at all: nothing moves
    CHECK(problem.W.value().to_vector() == W_after_one);
    CHECK(problem.b.value().to_vector() == b_before);
    CHECK(sgd.step_count() == 2);
}

// ---- state for checkpoints ----

TEST_CASE("optimizer state: loaded into a fresh optimizer after 3 steps, the next 2 steps are identical") {
    for (const reference::Run& run : reference::runs) {
        CAPTURE(run.name);
        Problem first;
        auto first_optimizer = make_optimizer(run, first.parameters());
        for (int step = 1; step <= 3; ++step) train_step(first, *first_optimizer, run, step);
        nn::OptimizerState saved = first_optimizer->state();
        CHECK(saved.step_count == 3);

        // Same parameter values, one optimizer given the saved state and one starting afresh.
        Problem resumed, restarted;
        for (Problem* copy : {&resumed, &restarted}) {
            copy->W.set_value(first.W.value().clone());
            copy->b.set_value(first.b.value().clone());
        }
        auto resumed_optimizer = make_optimizer(run, resumed.parameters());
        resumed_optimizer->load_state(saved);
        CHECK(same_state(resumed_optimizer->state(), saved));
        auto restarted_optimizer = make_optimizer(run, restarted.parameters());

        for (int step = 4; step <= 5; ++step) {
            train_step(first, *first_optimizer, run, step);
            train_step(resumed, *resumed_optimizer, run, step);
            train_step(restarted, *restarted_optimizer, run, step);
        }
        CHECK(resumed.values() == first.values());
        CHECK(resumed_optimizer->step_count() == 5);
        // Without the state the steps differ (except for plain SGD, which keeps none), so the
        // equality above shows the state was used.
        bool keeps_state = std::string(run.kind) != "SGD" || run.momentum != 0;
        if (keeps_state) CHECK(restarted.values() != first.values());
    }
}

TEST_CASE("optimizer state: PyTorch's names, per-parameter step counts, and a snapshot that later steps leave alone") {
    const reference::Run& run = reference::runs[6];  // Adam with b skipped on steps 2 and 4
    REQUIRE(std::string(run.name) == "adam_b_skipped_on_steps_2_and_4");
    Problem problem;
    auto adam = make_optimizer(run, problem.parameters());
    train_step(problem, *adam, run, 1);
    nn::OptimizerState after_one = adam->state();
    CHECK(keys_of(after_one) ==
          std::set<std::string>{"0.exp_avg", "0.exp_avg_sq", "0.step", "1.exp_avg", "1.exp_avg_sq", "1.step"});
    // After one step from zero: exp_avg = (1 - beta1) g, exp_avg_sq = (1 - beta2) g².
    Problem fresh;
    fresh.backward();
    std::vector<double> g = fresh.W.grad().to_vector();
    std::vector<double> exp_avg = after_one.tensors.at("0.exp_avg").to_vector();
    std::vector<double> exp_avg_sq = after_one.tensors.at("0.exp_avg_sq").to_vector();
    for (size_t i = 0; i < g.size(); ++i) {
        CHECK(exp_avg[i] == doctest::Approx((1 - run.beta1) * g[i]).epsilon(1e-14));
        CHECK(exp_avg_sq[i] == doctest::Approx((1 - run.beta2) * g[i] * g[i]).epsilon(1e-14));
    }

    for (int step = 2; step <= 3; ++step) train_step(problem, *adam, run, step);
    nn::OptimizerState after_three = adam->state();
    CHECK(after_three.tensors.at("0.step").dtype() == Dtype::Int64);
    CHECK(after_three.tensors.at("0.step").item() == 3);
    CHECK(after_three.tensors.at("1.step").item() == 2);  // b had no gradient on step 2
    CHECK(after_three.step_count == 3);
    // The tensors handed out after step 1 still hold step 1's values.
    CHECK(after_one.tensors.at("0.exp_avg").to_vector() == exp_avg);
    CHECK(after_one.tensors.at("0.step").item() == 1);

    nn::Adam amsgrad(problem.parameters(), {.amsgrad = true});
    problem.backward();
    amsgrad.step();
    CHECK(keys_of(amsgrad.state()).count("0.max_exp_avg_sq") == 1);
}

TEST_CASE("optimizer state: a state that does not fit is refused with one line, and changes nothing") {
    Problem problem;
    nn::Adam adam(problem.parameters(), {.learning_rate = 0.1});
    for (int step = 0; step < 2; ++step) {
        adam.zero_grad();
        problem.backward();
        adam.step();
    }
    const nn::OptimizerState good = adam.state();

    auto refused = [&](nn::OptimizerState bad, const std::string& fragment) {
        CAPTURE(fragment);
        CHECK_ERROR_MENTIONS(adam.load_state(bad), fragment);
        CHECK(same_state(adam.state(), good));
    };
    nn::OptimizerState wrong_shape = good;
    wrong_shape.tensors["0.exp_avg"] = f64({1, 2, 3}, {3});
    refused(wrong_shape, "entry '0.exp_avg' is float64 [3] but should be a float tensor of shape [2, 3]");

    nn::OptimizerState out_of_range = good;
    out_of_range.tensors["2.exp_avg"] = f64({1, 2, 3}, {3});
    refused(out_of_range, "entry '2.exp_avg' is for parameter 2, but this optimizer has 2 parameters");

    nn::OptimizerState badly_named = good;
    badly_named.tensors["exp_avg"] = f64({1, 2, 3}, {3});
    refused(badly_named, "entry 'exp_avg' is not named '<parameter index>.<state name>'");

    nn::OptimizerState partial = good;
    partial.tensors.erase("1.exp_avg_sq");
    refused(partial, "parameter 1 has only part of its state");

    nn::OptimizerState bad_step = good;
    bad_step.tensors["0.step"] = Tensor::from_indices({0}, {});
    refused(bad_step, "entry '0.step' must be one int64 count >= 1");

    nn::OptimizerState negative_count = good;
    negative_count.step_count = -1;
    refused(negative_count, "step count -1 is negative");

    nn::OptimizerState amsgrad_entry = good;
    amsgrad_entry.tensors["0.max_exp_avg_sq"] = good.tensors.at("0.exp_avg_sq");
    refused(amsgrad_entry, "entry '0.max_exp_avg_sq' is not state this Adam keeps");

    Problem other;
    nn::SGD sgd(other.parameters(), {.learning_rate = 0.1, .momentum = 0.9});
    other.backward();
    sgd.step();
    refused(sgd.state(), "entry '0.momentum_buffer' is not state this Adam keeps");

    nn::SGD no_momentum(other.parameters(), {.learning_rate = 0.1});
    CHECK_ERROR_MENTIONS(no_momentum.load_state(sgd.state()), "is not state this SGD keeps");

    // A state saved in float32 loads into float64 parameters, cast.
    nn::OptimizerState float32_state = good;
    for (auto& [key, tensor] : float32_state.tensors)
        if (key.ends_with("exp_avg")) tensor = tensor.to(Dtype::Float32);
    adam.load_state(float32_state);
    CHECK(adam.state().tensors.at("0.exp_avg").dtype() == Dtype::Float64);
}

// ---- bad input ----

TEST_CASE("optimizer: bad options and parameter lists are refused with one line") {
    Problem problem;
    std::vector<Var*> parameters = problem.parameters();
    CHECK_ERROR_MENTIONS(nn::SGD(parameters, {}), "SGD: no learning rate given");
    CHECK_ERROR_MENTIONS(nn::SGD(parameters, {.learning_rate = -1}), "SGD: learning rate -1 is not a finite number >= 0");
    CHECK_ERROR_MENTIONS(nn::SGD(parameters, {.learning_rate = 0.1, .momentum = -0.5}), "momentum -0.5 must be >= 0");
    CHECK_ERROR_MENTIONS(nn::SGD(parameters, {.learning_rate = 0.1, .weight_decay = -1}), "weight_decay -1");
    CHECK_ERROR_MENTIONS(nn::SGD(parameters, {.learning_rate = 0.1, .nesterov = true}),
                         "nesterov needs momentum > 0 and dampening 0 (got momentum 0, dampening 0)");
    CHECK_ERROR_MENTIONS(nn::SGD(parameters, {.learning_rate = 0.1, .momentum = 0.9, .dampening = 0.1, .nesterov = true}),
                         "nesterov needs momentum > 0 and dampening 0");
    CHECK_ERROR_MENTIONS(nn::Adam(parameters, {.beta1 = 1.0}), "Adam: beta1 1 must be in [0, 1)");
    CHECK_ERROR_MENTIONS(nn::AdamW(parameters, {.beta2 = -0.1}), "AdamW: beta2 -0.1 must be in [0, 1)");
    CHECK_ERROR_MENTIONS(nn::Adam(parameters, {.eps = -1e-8}), "Adam: eps -1e-08 must be >= 0");
    CHECK_ERROR_MENTIONS(nn::AdamW(parameters, {.weight_decay = -0.01}), "AdamW: weight_decay -0.01 must be >= 0");
    CHECK_ERROR_MENTIONS(nn::Adam(parameters, {.learning_rate = std::nan("")}), "Adam: learning rate nan");

    CHECK_ERROR_MENTIONS(nn::Adam({}), "Adam: the parameter list is empty");
    CHECK_ERROR_MENTIONS(nn::Adam({&problem.W, nullptr}), "Adam: parameter 1 is a null pointer");
    Var constant(f64({1, 2}, {2}));
    CHECK_ERROR_MENTIONS(nn::Adam({&problem.W, &constant}), "Adam: parameter 1 (shape [2]) is not a leaf");
    Var copy_of_W = problem.W;  // a handle to the same parameter
    CHECK_ERROR_MENTIONS(nn::Adam({&problem.W, &problem.b, &copy_of_W}), "parameter 2 appears twice");

    nn::Adam adam(parameters);
    CHECK_ERROR_MENTIONS(adam.set_learning_rate(-0.5), "Adam: learning rate -0.5 is not a finite number >= 0");
    CHECK_ERROR_MENTIONS(adam.set_learning_rate(std::numeric_limits<double>::infinity()), "learning rate inf");
    CHECK(adam.learning_rate() == 1e-3);
}

// ---- gradient clipping ----

TEST_CASE("clip_grad_norm: total norm and clipped gradients match PyTorch's clip_grad_norm_") {
    for (const reference::Clip& clip : reference::clips) {
        CAPTURE(clip.max_norm);
        Problem problem;
        problem.backward();
        double total_norm = nn::clip_grad_norm(problem.parameters(), clip.max_norm);
        CHECK(std::abs(total_norm - clip.total_norm) < 1e-12);
        std::vector<double> grads = problem.W.grad().to_vector();
        for (double g : problem.b.grad().to_vector()) grads.push_back(g);
        CHECK(max_difference(grads, clip.grads_after) < 1e-12);
    }
}

TEST_CASE("clip_grad_norm: the norm over all gradients as one vector; parameters without one are skipped") {
    Var a = Var::parameter(f64({0, 0}, {2}));
    Var b = Var::parameter(f64({0, 0, 0}, {3}));
    Var no_grad = Var::parameter(f64({5}, {1}));
    a.set_grad(f64({3, -4}, {2}));
    b.set_grad(f64({1, 2, -2}, {3}));
    // Naive: sqrt(9 + 16 + 1 + 4 + 4) = sqrt(34); clipped to norm 2 each grad is scaled by 2 / (sqrt(34) + 1e-6).
    double expected_norm = std::sqrt(34.0);
    double scale = 2.0 / (expected_norm + 1e-6);
    CHECK(nn::clip_grad_norm({&a, &no_grad, &b}, 2.0) == doctest::Approx(expected_norm).epsilon(1e-15));
    CHECK_FALSE(no_grad.grad().defined());
    std::vector<double> a_grad = a.grad().to_vector(), b_grad = b.grad().to_vector();
    CHECK(a_grad[0] == doctest::Approx(3 * scale).epsilon(1e-15));
    CHECK(a_grad[1] == doctest::Approx(-4 * scale).epsilon(1e-15));
    CHECK(b_grad[2] == doctest::Approx(-2 * scale).epsilon(1e-15));

    // Below max_norm nothing changes, not even by rounding.
    std::vector<double> before = b.grad().to_vector();
    CHECK(nn::clip_grad_norm({&b}, 100.0) == doctest::Approx(3.0 * scale).epsilon(1e-15));
    CHECK(b.grad().to_vector() == before);

    // With no gradient anywhere the norm is 0.
    CHECK(nn::clip_grad_norm({&no_grad}, 1.0) == 0.0);
    CHECK(nn::clip_grad_norm({}, 1.0) == 0.0);
}

TEST_CASE("clip_grad_norm: a clipped gradient keeps accumulating on the next backward") {
    Problem problem;
    problem.backward();
    nn::clip_grad_norm(problem.parameters(), 1.0);
    std::vector<double> clipped = problem.W.grad().to_vector();
    Problem fresh;
    fresh.backward();
    std::vector<double> one_more = fresh.W.grad().to_vector();
    problem.backward();
    std::vector<double> accumulated = problem.W.grad().to_vector();
    for (size_t i = 0; i < accumulated.size(); ++i)
        CHECK(accumulated[i] == doctest::Approx(clipped[i] + one_more[i]).epsilon(1e-14));
}

TEST_CASE("clip_grad_norm: a non-finite norm is returned and the gradients are left as they are") {
    double inf = std::numeric_limits<double>::infinity();
    Var a = Var::parameter(f64({0, 0}, {2}));
    Var b = Var::parameter(f64({0, 0}, {2}));
    a.set_grad(f64({inf, 1}, {2}));
    b.set_grad(f64({3, 4}, {2}));
    CHECK(std::isinf(nn::clip_grad_norm({&a, &b}, 1.0)));
    CHECK(a.grad().to_vector() == std::vector<double>{inf, 1});
    CHECK(b.grad().to_vector() == std::vector<double>{3, 4});

    a.set_grad(f64({std::nan(""), 1}, {2}));
    CHECK(std::isnan(nn::clip_grad_norm({&a, &b}, 1.0)));
    CHECK(std::isnan(a.grad().at(0)));
    CHECK(b.grad().to_vector() == std::vector<double>{3, 4});
}

TEST_CASE("clip_grad_norm and set_grad: bad input is refused with one line") {
    Var a = Var::parameter(f64({1, 2}, {2}));
    CHECK_ERROR_MENTIONS(nn::clip_grad_norm({&a}, 0.0), "clip_grad_norm: max_norm 0 must be a finite number > 0");
    CHECK_ERROR_MENTIONS(nn::clip_grad_norm({&a}, -1.0), "max_norm -1");
    CHECK_ERROR_MENTIONS(nn::clip_grad_norm({&a}, std::nan("")), "max_norm nan");
    CHECK_ERROR_MENTIONS(nn::clip_grad_norm({&a, nullptr}, 1.0), "parameter 1 is a null pointer");

    CHECK_ERROR_MENTIONS(a.set_grad(f64({1, 2, 3}, {3})), "set_grad: gradient [3] float64 does not match the parameter [2] float64");
    CHECK_ERROR_MENTIONS(a.set_grad(Tensor::from_vector({1, 2}, {2}, Dtype::Float32)), "does not match the parameter");
    CHECK_ERROR_MENTIONS(a.set_grad(Tensor()), "set_grad: the gradient is an undefined tensor");
    Var constant(f64({1, 2}, {2}));
    CHECK_ERROR_MENTIONS(constant.set_grad(f64({1, 2}, {2})), "set_grad: this Var is not a leaf parameter");
}

// ---- learning-rate schedules ----

TEST_CASE("schedule: constant, with and without warmup") {
    auto plain = nn::LearningRateSchedule::constant(0.1);
    for (int64_t step : {0, 1, 1000}) CHECK(plain.learning_rate(step) == 0.1);
    auto warm = nn::LearningRateSchedule::constant(0.1, 4);
    // step / warmup_steps while step < 4, then 1.
    CHECK(warm.multiplier(0) == 0.0);
    CHECK(warm.multiplier(1) == 0.25);
    CHECK(warm.multiplier(3) == 0.75);
    CHECK(warm.multiplier(4) == 1.0);
    CHECK(warm.multiplier(10000) == 1.0);
    CHECK(warm.learning_rate(2) == doctest::Approx(0.05).epsilon(1e-15));
}

TEST_CASE("schedule: linear warmup then linear decay to 0 at total_steps") {
    auto schedule = nn::LearningRateSchedule::linear(2e-3, 10, 110);
    CHECK(schedule.multiplier(0) == 0.0);
    CHECK(schedule.multiplier(5) == 0.5);
    CHECK(schedule.multiplier(9) == 0.9);
    CHECK(schedule.multiplier(10) == 1.0);          // warmup boundary: the peak
    CHECK(schedule.multiplier(60) == 0.5);          // (110 - 60) / 100
    CHECK(schedule.multiplier(109) == doctest::Approx(0.01).epsilon(1e-15));
    CHECK(schedule.multiplier(110) == 0.0);         // the end
    CHECK(schedule.multiplier(150) == 0.0);         // and after it
    CHECK(schedule.learning_rate(60) == doctest::Approx(1e-3).epsilon(1e-15));
    // Without warmup the first step has the full rate.
    CHECK(nn::LearningRateSchedule::linear(1.0, 0, 4).multiplier(0) == 1.0);
    CHECK(nn::LearningRateSchedule::linear(1.0, 0, 4).multiplier(3) == 0.25);
    // Warmup as long as training (transformers' max(1, ·) keeps this defined): 0 at the end.
    CHECK(nn::LearningRateSchedule::linear(1.0, 5, 5).multiplier(4) == 0.8);
    CHECK(nn::LearningRateSchedule::linear(1.0, 5, 5).multiplier(5) == 0.0);
}

TEST_CASE("schedule: linear warmup then cosine decay, to 0 or to a floor") {
    const double pi = std::numbers::pi;
    auto schedule = nn::LearningRateSchedule::cosine(1e-3, 10, 110);
    CHECK(schedule.multiplier(0) == 0.0);
    CHECK(schedule.multiplier(5) == 0.5);
    CHECK(schedule.multiplier(10) == 1.0);  // warmup boundary
    // progress = (step - 10) / 100; multiplier = 0.5 (1 + cos(pi progress))
    CHECK(schedule.multiplier(35) == doctest::Approx(0.5 * (1 + std::cos(pi * 0.25))).epsilon(1e-15));
    CHECK(schedule.multiplier(60) == doctest::Approx(0.5).epsilon(1e-15));
    CHECK(schedule.multiplier(85) == doctest::Approx(0.5 * (1 + std::cos(pi * 0.75))).epsilon(1e-15));
    CHECK(schedule.multiplier(110) == 0.0);  // the end
    CHECK(schedule.multiplier(160) == 0.0);  // stays at the floor after it
    CHECK(schedule.learning_rate(60) == doctest::Approx(5e-4).epsilon(1e-15));

    // A floor of 1e-4: lr = 1e-4 + (1e-3 - 1e-4) · 0.5 (1 + cos(pi progress)) after warmup.
    auto floored = nn::LearningRateSchedule::cosine(1e-3, 10, 110, 1e-4);
    CHECK(floored.learning_rate(5) == doctest::Approx(5e-4).epsilon(1e-15));  // warmup from 0 is unchanged
    CHECK(floored.learning_rate(10) == doctest::Approx(1e-3).epsilon(1e-15));
    CHECK(floored.learning_rate(60) == doctest::Approx(1e-4 + 9e-4 * 0.5).epsilon(1e-15));
    CHECK(floored.learning_rate(110) == doctest::Approx(1e-4).epsilon(1e-15));
    CHECK(floored.learning_rate(500) == doctest::Approx(1e-4).epsilon(1e-15));
}

TEST_CASE("schedule: names, and bad settings refused with one line") {
    for (auto kind : {nn::ScheduleKind::Constant, nn::ScheduleKind::Linear, nn::ScheduleKind::Cosine})
        CHECK(nn::schedule_kind_from_name(nn::schedule_kind_name(kind)) == kind);
    CHECK_ERROR_MENTIONS(nn::schedule_kind_from_name("step"), "unknown learning-rate schedule 'step'; use constant, linear or cosine");
    CHECK_ERROR_MENTIONS(nn::LearningRateSchedule::cosine(1e-3, 20, 10), "cosine schedule: warmup_steps 20 exceed total_steps 10");
    CHECK_ERROR_MENTIONS(nn::LearningRateSchedule::linear(1e-3, 0, 0), "linear schedule: total_steps 0 must be >= 1");
    CHECK_ERROR_MENTIONS(nn::LearningRateSchedule::constant(1e-3, -1), "constant schedule: warmup_steps -1 is negative");
    CHECK_ERROR_MENTIONS(nn::LearningRateSchedule::constant(-1e-3), "base learning rate -0.001 is not a finite number >= 0");
    CHECK_ERROR_MENTIONS(nn::LearningRateSchedule::cosine(1e-3, 0, 10, 2e-3), "min_learning_rate 0.002 must be in [0, base learning rate 0.001]");
    CHECK_ERROR_MENTIONS(nn::LearningRateSchedule::linear(1e-3, 0, 10).learning_rate(-1), "linear schedule: step -1 is negative");
    // A hand-filled schedule is checked when used.
    nn::LearningRateSchedule hand{.kind = nn::ScheduleKind::Cosine, .base_learning_rate = 1e-3};
    CHECK_ERROR_MENTIONS(hand.learning_rate(0), "cosine schedule: total_steps 0 must be >= 1");
}

TEST_CASE("schedule: drives an optimizer's learning rate from its step count") {
    Problem problem;
    nn::SGD sgd(problem.parameters(), {.learning_rate = 1.0});
    auto schedule = nn::LearningRateSchedule::linear(0.5, 2, 6);
    std::vector<double> seen;
    for (int step = 0; step < 4; ++step) {
        sgd.set_learning_rate(schedule.learning_rate(sgd.step_count()));
        seen.push_back(sgd.learning_rate());
        sgd.zero_grad();
        problem.backward();
        sgd.step();
    }
    CHECK(seen == std::vector<double>{0.0, 0.25, 0.5, 0.375});
}

// The fused update (one sweep) against the reference (one Tensor operation per line): equal
// to a few units in the last place (float32 2^-23 = 1.2e-7, float64 2^-52 = 2.2e-16), for both dtypes, Adam and AdamW, with and without amsgrad, over several steps
// of random gradients (a parameter larger than one thread's share, so the sweep splits).
TEST_CASE("adam update: the fused sweep equals the reference to a few ulp, step after step") {
    for (Dtype dtype : {Dtype::Float32, Dtype::Float64}) {
        for (bool decoupled : {false, true}) {
            for (bool amsgrad : {false, true}) {
                CAPTURE(std::string(dtype_name(dtype)));
                CAPTURE(decoupled);
                CAPTURE(amsgrad);
                Generator generator(5);
                const Shape shape{300, 170};
                Tensor p = generator.normal(shape, dtype);
                nn::AdamTensors reference{p, zeros_like(p), zeros_like(p), amsgrad ? zeros_like(p) : Tensor()};
                nn::AdamTensors fused = reference;
                for (int64_t step = 1; step <= 4; ++step) {
                    Tensor grad = generator.normal(shape, dtype, 0.0, 0.1);
                    nn::AdamHyperparameters h{.learning_rate = 3e-3, .beta1 = 0.8, .beta2 = 0.99, .eps = 1e-6,
                                              .weight_decay = 0.05, .decoupled_weight_decay = decoupled,
                                              .amsgrad = amsgrad, .step = step};
                    reference = nn::reference_adam_update(reference, grad, h);
                    fused = nn::fused_adam_update(fused, grad, h);
                }
                // Relative to each tensor's largest value: a moment near 0 is a difference of
                // two terms, and the last bit of those terms is what may differ.
                const double tolerance = dtype == Dtype::Float32 ? 1e-6 : 1e-14;  // about 8 and 45 ulp
                auto agree = [&](const Tensor& a, const Tensor& b) { return allclose(a, b, tolerance, tolerance * max_abs(b)); };
                CHECK(agree(fused.parameter, reference.parameter));
                CHECK(agree(fused.exp_avg, reference.exp_avg));
                CHECK(agree(fused.exp_avg_sq, reference.exp_avg_sq));
                if (amsgrad) CHECK(agree(fused.max_exp_avg_sq, reference.max_exp_avg_sq));
                CHECK(max_abs_difference(fused.parameter, p) > 0.0);  // it did move
            }
        }
    }
}
