// The loss registry: lookup by name, parameter defaults and `--set` validation, input
// presence and wrapping, and the gradient checks it registers for `nce gradcheck`.
#include <cmath>

#include "losses/losses.h"
#include "losses/worked_example.h"
#include "tests/loss_test_helpers.h"
#include "tests/test_helpers.h"

using namespace nce;
using namespace nce::testing;
using losses::InputKind;
using losses::ParamRule;

namespace loss_registry_tests {

// A made-up loss with one parameter per rule and one input per kind, to test the registry
// without depending on any real loss's definition.
losses::LossDefinition every_rule_loss() {
    losses::LossDefinition loss;
    loss.name = "every_rule";
    loss.inputs = {{"x", InputKind::Embedding},
                   {"log_tau", InputKind::Scalar, false},
                   {"guide", InputKind::Guide, false},
                   {"qid", InputKind::Data, false}};
    loss.params = {{"tau", "0.1", ParamRule::Positive, {}},
                   {"margin", "0.0", ParamRule::NonNegative, {}},
                   {"p_relax", "0.1", ParamRule::UnitInterval, {}},
                   {"mask_self", "1", ParamRule::Flag, {}},
                   {"metric", "dot", ParamRule::Choice, {"dot", "euclidean"}},
                   {"note", "", ParamRule::Text, {}}};
    return loss;
}

std::map<std::string, Tensor> x_only() { return {{"x", Tensor::zeros({2, 3}, Dtype::Float64)}}; }


TEST_CASE("registry: all_losses lists the spec's tables in order; find_loss finds each by name") {
    std::vector<std::string> expected{"infonce",   "infonce_symmetric", "ntxent",  "multi_positive", "rank_infonce",
                                      "hard_negative_infonce", "triplet", "listwise", "contrastive", "smooth_l1",
                                      "multi_positive_in", "relaxed_hard_negative", "siglip", "dcl", "debiased",
                                      "cosent", "margin_mse", "megabatch_margin", "gist", "distill_kl",
                                      "matryoshka"};
    const std::vector<losses::LossDefinition>& all = losses::all_losses();
    REQUIRE(all.size() == expected.size());
    for (size_t k = 0; k < expected.size(); ++k) {
        CHECK(all[k].name == expected[k]);
        CHECK(&losses::find_loss(expected[k]) == &all[k]);
    }
}

TEST_CASE("registry: an unknown loss is an error naming it and listing the known ones") {
    CHECK_ERROR_MENTIONS(losses::find_loss("infoNCE"), "unknown loss 'infoNCE'");
    CHECK_ERROR_MENTIONS(losses::find_loss("simclr"), "known losses: infonce, infonce_symmetric, ntxent, multi_positive");
}

TEST_CASE("registry: the InfoNCE family's inputs and parameters are the spec's") {
    const losses::LossDefinition& infonce = losses::find_loss("infonce");
    REQUIRE(infonce.inputs.size() == 4);
    CHECK(infonce.inputs[0].name == "q");
    CHECK(infonce.inputs[1].name == "p");
    CHECK(infonce.inputs[2].name == "neg");
    CHECK(!infonce.inputs[2].required);
    CHECK(infonce.inputs[3].name == "log_tau");
    CHECK(infonce.inputs[3].kind == InputKind::Scalar);
    REQUIRE(infonce.params.size() == 1);
    CHECK(infonce.params[0].name == "tau");
    CHECK(infonce.params[0].default_value == "0.05");
    CHECK(losses::find_loss("infonce_symmetric").params[0].default_value == "0.05");

    const losses::LossDefinition& ntxent = losses::find_loss("ntxent");
    REQUIRE(ntxent.inputs.size() == 2);
    CHECK(ntxent.inputs[0].name == "z");
    CHECK(ntxent.inputs[1].name == "log_tau");
    REQUIRE(ntxent.params.size() == 2);
    CHECK(ntxent.params[0].default_value == "0.1");
    CHECK(ntxent.params[1].name == "mask_self");
    CHECK(ntxent.params[1].default_value == "1");
}

TEST_CASE("make_arguments: defaults fill every parameter; --set overrides them") {
    losses::LossDefinition loss = every_rule_loss();
    losses::LossArguments defaults = losses::make_arguments(loss, x_only(), {});
    CHECK(defaults.number("tau") == 0.1);
    CHECK(defaults.number("margin") == 0.0);
    CHECK(defaults.number("mask_self") == 1.0);
    CHECK(defaults.text("metric") == "dot");

    losses::LossArguments set =
        losses::make_arguments(loss, x_only(), {{"tau", "0.07"}, {"metric", "euclidean"}, {"mask_self", "0"}});
    CHECK(set.number("tau") == 0.07);
    CHECK(set.text("metric") == "euclidean");
    CHECK(set.number("mask_self") == 0.0);
    CHECK(set.number("margin") == 0.0);  // untouched

    losses::LossArguments infonce = losses::make_arguments(losses::find_loss("infonce"),
                                                           {{"q", x_only()["x"]}, {"p", x_only()["x"]}}, {});
    CHECK(infonce.number("tau") == 0.05);
}

TEST_CASE("make_parameters: numbers are parsed once; the text of a parameter is not read again as a number") {
    losses::LossArguments parsed = losses::make_parameters(every_rule_loss(), {{"tau", "0.07"}});
    CHECK(parsed.numbers.at("tau") == 0.07);
    CHECK(parsed.numbers.count("metric") == 0);  // a choice stays text
    parsed.params["tau"] = "0.5";                // text changed after the check: a step still reads 0.07
    CHECK(parsed.number("tau") == 0.07);
    losses::LossArguments by_hand;
    by_hand.params["tau"] = "0.05";  // never checked: no number to read
    CHECK_ERROR_MENTIONS(by_hand.number("tau"), "parameter tau is not set as a number");
}

TEST_CASE("make_arguments: an unknown parameter is an error naming it and listing the loss's parameters") {
    CHECK_ERROR_MENTIONS(losses::make_arguments(every_rule_loss(), x_only(), {{"temperature", "0.1"}}),
                         "unknown parameter 'temperature'; every_rule takes: tau, margin, p_relax, mask_self, metric, note");
    losses::LossDefinition no_params = every_rule_loss();
    no_params.params.clear();
    CHECK_ERROR_MENTIONS(losses::make_arguments(no_params, x_only(), {{"tau", "0.1"}}), "takes no parameters");
}

TEST_CASE("make_arguments: text that is not a finite number is an error naming the parameter and the text") {
    for (const char* bad : {"abc", "0.1x", "", " ", "nan", "inf", "-inf", "1e999", "0,1"}) {
        INFO("text '" << bad << "'");
        CHECK_ERROR_MENTIONS(losses::make_arguments(every_rule_loss(), x_only(), {{"tau", bad}}),
                             fmt::format("parameter tau must be a finite number, got '{}'", bad));
    }
    CHECK(losses::make_arguments(every_rule_loss(), x_only(), {{"tau", "1e-3"}}).number("tau") == 1e-3);
}

TEST_CASE("make_arguments: each range rule of the spec's Conventions") {
    losses::LossDefinition loss = every_rule_loss();
    auto accepts = [&](const char* name, const char* value) {
        return losses::make_arguments(loss, x_only(), {{name, value}}).text(name) == value;
    };
    // tau > 0
    CHECK_ERROR_MENTIONS(losses::make_arguments(loss, x_only(), {{"tau", "0"}}), "parameter tau must be > 0, got 0");
    CHECK_ERROR_MENTIONS(losses::make_arguments(loss, x_only(), {{"tau", "-0.5"}}), "tau must be > 0");
    CHECK(accepts("tau", "1e-9"));
    // margin >= 0
    CHECK_ERROR_MENTIONS(losses::make_arguments(loss, x_only(), {{"margin", "-0.1"}}), "margin must be >= 0");
    CHECK(accepts("margin", "0"));
    // 0 <= p_relax < 1
    CHECK_ERROR_MENTIONS(losses::make_arguments(loss, x_only(), {{"p_relax", "1"}}), "0 <= p_relax < 1");
    CHECK_ERROR_MENTIONS(losses::make_arguments(loss, x_only(), {{"p_relax", "-0.01"}}), "0 <= p_relax < 1");
    CHECK(accepts("p_relax", "0"));
    CHECK(accepts("p_relax", "0.999"));
    // flags are 0 or 1
    CHECK_ERROR_MENTIONS(losses::make_arguments(loss, x_only(), {{"mask_self", "2"}}), "mask_self is a flag: 0 or 1");
    CHECK_ERROR_MENTIONS(losses::make_arguments(loss, x_only(), {{"mask_self", "0.5"}}), "0 or 1");
    CHECK(accepts("mask_self", "0"));
    // choices
    CHECK_ERROR_MENTIONS(losses::make_arguments(loss, x_only(), {{"metric", "cosine"}}),
                         "parameter metric must be one of dot, euclidean; got 'cosine'");
    // free text: any text passes here, the empty default included (the loss checks it)
    CHECK(losses::make_arguments(loss, x_only(), {}).text("note") == "");
    CHECK(accepts("note", "64,128, 256"));
    CHECK(accepts("note", "not a number"));
    // the real losses carry the rule too: --set tau=0 on infonce
    CHECK_ERROR_MENTIONS(losses::make_arguments(losses::find_loss("infonce"),
                                                {{"q", x_only()["x"]}, {"p", x_only()["x"]}}, {{"tau", "0"}}),
                         "infonce: parameter tau must be > 0");
}

TEST_CASE("make_arguments: a parameter given is validated even where log_tau makes it unused") {
    std::map<std::string, Tensor> inputs = x_only();
    inputs["log_tau"] = Tensor::scalar(std::log(0.1), Dtype::Float64);
    CHECK_ERROR_MENTIONS(losses::make_arguments(every_rule_loss(), inputs, {{"tau", "-1"}}), "tau must be > 0");
}

TEST_CASE("make_arguments: required inputs must be there; inputs the loss does not take are ignored") {
    CHECK_ERROR_MENTIONS(losses::make_arguments(every_rule_loss(), {}, {}), "every_rule: required input x is missing");
    CHECK_ERROR_MENTIONS(losses::make_arguments(losses::find_loss("infonce"), {{"q", x_only()["x"]}}, {}),
                         "required input p is missing (infonce takes q, p, optional neg, optional log_tau)");
    std::map<std::string, Tensor> inputs = x_only();
    inputs["unrelated"] = Tensor::zeros({4}, Dtype::Float64);
    losses::LossArguments arguments = losses::make_arguments(every_rule_loss(), inputs, {});
    CHECK(arguments.has("x"));
    CHECK(!arguments.has("unrelated"));
    CHECK(!arguments.has("log_tau"));
    CHECK(!arguments.optional("log_tau").defined());
    CHECK_ERROR_MENTIONS(arguments.input("log_tau"), "log_tau");
}

TEST_CASE("make_arguments: embeddings and scalars become leaves; guides and data stay constants") {
    std::map<std::string, Tensor> inputs = x_only();
    inputs["log_tau"] = Tensor::scalar(0.0, Dtype::Float64);
    inputs["guide"] = Tensor::zeros({2, 3}, Dtype::Float64);
    inputs["qid"] = Tensor::from_indices({0, 0}, {2});
    losses::LossArguments arguments = losses::make_arguments(every_rule_loss(), inputs, {});
    CHECK(arguments.input("x").is_leaf());
    CHECK(arguments.input("log_tau").is_leaf());
    CHECK(!arguments.input("guide").requires_grad());
    CHECK(!arguments.input("qid").requires_grad());
    CHECK(arguments.input("qid").dtype() == Dtype::Int64);

    inputs["x"] = Tensor::from_indices({1, 2, 3, 4, 5, 6}, {2, 3});
    CHECK_ERROR_MENTIONS(losses::make_arguments(every_rule_loss(), inputs, {}),
                         "every_rule: input x must be float32 or float64, got int64");
}

TEST_CASE("registry: compute through make_arguments equals the typed function, gradients included") {
    Generator generator(3);
    Tensor q = unit_rows(generator, 4, 6), p = unit_rows(generator, 4, 6), negatives = unit_rows(generator, 2, 6);
    const losses::LossDefinition& loss = losses::find_loss("infonce");
    losses::LossArguments arguments =
        losses::make_arguments(loss, {{"q", q}, {"p", p}, {"neg", negatives}}, {{"tau", "0.2"}});
    Var through_registry = loss.compute(arguments);
    through_registry.backward();

    Var q_leaf(q, true), p_leaf(p, true), negatives_leaf(negatives, true);
    Var typed = losses::infonce(q_leaf, p_leaf, negatives_leaf, Var(), 0.2);
    typed.backward();
    CHECK(through_registry.value().item() == typed.value().item());
    CHECK(max_abs_difference(arguments.input("q").grad(), q_leaf.grad()) == 0);
    CHECK(max_abs_difference(arguments.input("neg").grad(), negatives_leaf.grad()) == 0);

    losses::LossArguments ntxent_arguments =
        losses::make_arguments(losses::find_loss("ntxent"), {{"z", concat({q, p}, 0)}}, {{"mask_self", "0"}});
    CHECK(losses::find_loss("ntxent").compute(ntxent_arguments).value().item() ==
          losses::ntxent(Var(concat({q, p}, 0)), Var(), 0.1, false).value().item());
}

TEST_CASE("register_loss_checks: two cases per written loss, named by the loss; the InfoNCE family passes") {
    CheckRegistry registry;
    losses::register_loss_checks(registry);
    for (const char* name : {"infonce", "infonce_symmetric", "ntxent"}) {
        int cases = 0;
        for (const CheckCase& check : registry.cases()) {
            if (check.op != name) continue;
            ++cases;
            for (Dtype dtype : kFloatDtypes) {
                INFO(name << " " << check.description << " " << dtype_name(dtype));
                CHECK(run_check(check, dtype, 1).passed);
            }
        }
        CHECK(cases == 2);
    }
    for (const CheckCase& check : registry.cases())
        CHECK(losses::find_loss(check.op).name == check.op);  // every case is a registered loss
}

TEST_CASE("worked examples: every loss has one, and each closed-form gradient of its page equals the backward") {
    for (const losses::LossDefinition& loss : losses::all_losses()) {
        INFO("loss " << loss.name);
        REQUIRE(loss.worked_example != nullptr);
        losses::WorkedExampleRun run = losses::run_worked_example(loss);
        CHECK(std::isfinite(run.loss));
        CHECK_MESSAGE(!run.checks.empty(), "the page's steps name no gradient (a step d<input>) to check");
        for (const losses::ClosedFormCheck& check : run.checks) {
            INFO("d" << check.input);
            CHECK(check.max_difference <= losses::kClosedFormTolerance);
        }
    }
}

}  // namespace loss_registry_tests
