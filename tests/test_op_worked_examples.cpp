// The op worked examples of docs/derivations/ops/ (engine/worked_examples/): each runs, each
// differentiable input's closed form is among its steps and equals the backward to 1e-12, and
// no name is taken twice (by another example or by a loss: `nce explain NAME` takes both).
// tests/explain_pages_test.sh holds the pages to the numbers these examples print.
#include <set>

#include "engine/worked_examples/op_worked_example.h"
#include "losses/loss.h"
#include "tests/test_helpers.h"

using namespace nce;
using namespace nce::worked_examples;

TEST_CASE("op worked examples: every closed-form gradient of every op page equals the backward, to 1e-12") {
    REQUIRE(!op_worked_examples().empty());
    for (const OpWorkedExample& example : op_worked_examples()) {
        CAPTURE(example.name);
        OpWorkedExampleRun run = run_op_worked_example(example);
        std::set<std::string> checked;
        for (const OpClosedFormCheck& check : run.checks) {
            CAPTURE(check.input);
            CHECK(check.max_difference <= kOpClosedFormTolerance);
            checked.insert(check.input);
        }
        for (const ExampleInput& input : example.inputs) {
            CAPTURE(input.name);
            if (input.differentiable) CHECK(checked.count(input.name) == 1);  // a step named d<input>
            if (input.differentiable) CHECK(input.value.dtype() == Dtype::Float64);
        }
        if (example.upstream.defined()) CHECK(example.upstream.shape() == run.output.shape());
        else CHECK(run.output.numel() == 1);
    }
}

TEST_CASE("op worked examples: names are unique, no loss's name, and find_op_worked_example finds each") {
    std::set<std::string> names;
    for (const OpWorkedExample& example : op_worked_examples()) {
        CAPTURE(example.name);
        CHECK(names.insert(example.name).second);
        CHECK(find_op_worked_example(example.name) == &example);
        CHECK(op_example_page(example).rfind("docs/derivations/ops/", 0) == 0);
    }
    for (const losses::LossDefinition& loss : losses::all_losses()) {
        CAPTURE(loss.name);
        CHECK(names.count(loss.name) == 0);
    }
    CHECK(find_op_worked_example("no_such_op") == nullptr);
}

TEST_CASE("op worked examples: a closed form that is off shows in the run's check") {
    // The matmul example with its dA step scaled by (1 + 1e-9): the check reports the gap.
    OpWorkedExample broken = *find_op_worked_example("matmul");
    auto steps = broken.steps;
    broken.steps = [steps](const std::vector<Tensor>& x, const Tensor& W) {
        std::vector<ExampleStep> result = steps(x, W);
        for (ExampleStep& step : result)
            if (step.name == "dA") step.value = step.value * (1 + 1e-9);
        return result;
    };
    OpWorkedExampleRun run = run_op_worked_example(broken);
    bool found = false;
    for (const OpClosedFormCheck& check : run.checks) {
        if (check.input != "A") continue;
        found = true;
        CHECK(check.max_difference > kOpClosedFormTolerance);
    }
    CHECK(found);
}
