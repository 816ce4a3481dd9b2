// The loss registry: lookup by name, and turning a name's inputs and `--set` overrides
// into validated LossArguments.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "losses/losses.h"

namespace nce::losses {
namespace {

// The whole of `text` as a finite number; false for "", "0.1x", "abc", "nan", "inf".
bool parse_number(const std::string& text, double& value) {
    if (text.empty()) return false;
    const char* begin = text.c_str();
    char* end = nullptr;
    errno = 0;
    value = std::strtod(begin, &end);
    return end == begin + text.size() && errno == 0 && std::isfinite(value);
}

std::string parameter_list(const LossDefinition& loss) {
    if (loss.params.empty()) return fmt::format("{} takes no parameters", loss.name);
    std::vector<std::string> names;
    for (const ParamSpec& param : loss.params) names.push_back(param.name);
    return fmt::format("{} takes: {}", loss.name, fmt::join(names, ", "));
}

std::string input_list(const LossDefinition& loss) {
    std::vector<std::string> names;
    for (const InputSpec& input : loss.inputs) names.push_back(input.required ? input.name : "optional " + input.name);
    return fmt::format("{} takes {}", loss.name, fmt::join(names, ", "));
}

// Throws one line naming the parameter and what its rule expects; a number's value, parsed
// here once, is returned (nothing for text and choices).
std::optional<double> validate_parameter(const LossDefinition& loss, const ParamSpec& param, const std::string& text) {
    if (param.rule == ParamRule::Text) return std::nullopt;  // the loss reads and checks it
    if (param.rule == ParamRule::Choice) {
        bool known = std::find(param.choices.begin(), param.choices.end(), text) != param.choices.end();
        NCE_CHECK(known, "{}: parameter {} must be one of {}; got '{}'", loss.name, param.name,
                  fmt::join(param.choices, ", "), text);
        return std::nullopt;
    }
    double value = 0;
    NCE_CHECK(parse_number(text, value), "{}: parameter {} must be a finite number, got '{}'", loss.name, param.name,
              text);
    switch (param.rule) {
        case ParamRule::Positive:
            NCE_CHECK(value > 0, "{}: parameter {} must be > 0, got {}", loss.name, param.name, text);
            break;
        case ParamRule::NonNegative:
            NCE_CHECK(value >= 0, "{}: parameter {} must be >= 0, got {}", loss.name, param.name, text);
            break;
        case ParamRule::UnitInterval:
            NCE_CHECK(value >= 0 && value < 1, "{}: parameter {} must satisfy 0 <= {} < 1, got {}", loss.name,
                      param.name, param.name, text);
            break;
        case ParamRule::Flag:
            NCE_CHECK(value == 0 || value == 1, "{}: parameter {} is a flag: 0 or 1, got {}", loss.name, param.name,
                      text);
            break;
        case ParamRule::Choice:
        case ParamRule::Text: break;
    }
    return value;
}

}  // namespace

const Var& LossArguments::input(const std::string& name) const {
    auto it = inputs.find(name);
    NCE_CHECK(it != inputs.end(), "loss: input {} is missing", name);
    return it->second;
}

Var LossArguments::optional(const std::string& name) const {
    auto it = inputs.find(name);
    return it == inputs.end() ? Var() : it->second;
}

double LossArguments::number(const std::string& param) const {
    auto it = numbers.find(param);
    NCE_CHECK(it != numbers.end(), "loss: parameter {} is not set as a number (make_parameters sets them)", param);
    return it->second;
}

const std::string& LossArguments::text(const std::string& param) const {
    auto it = params.find(param);
    NCE_CHECK(it != params.end(), "loss: parameter {} is not set", param);
    return it->second;
}

const std::vector<LossDefinition>& all_losses() {
    // The order of the spec's tables: the seed documents' losses, then the ones practitioners
    // reach for next, then those for distillation and nested embeddings.
    static const std::vector<LossDefinition> losses = {
        infonce_definition(),  infonce_symmetric_definition(), ntxent_definition(),  multi_positive_definition(),
        rank_infonce_definition(), hard_negative_infonce_definition(), triplet_definition(), listwise_definition(),
        contrastive_definition(), smooth_l1_definition(),
        multi_positive_in_definition(), relaxed_hard_negative_definition(), siglip_definition(), dcl_definition(),
        debiased_definition(), cosent_definition(), margin_mse_definition(), megabatch_margin_definition(),
        gist_definition(),
        distill_kl_definition(), matryoshka_definition(),
    };
    return losses;
}

const LossDefinition& find_loss(const std::string& name) {
    std::vector<std::string> names;
    for (const LossDefinition& loss : all_losses()) {
        if (loss.name == name) return loss;
        names.push_back(loss.name);
    }
    fail("unknown loss '{}'; known losses: {}", name, fmt::join(names, ", "));
}

LossArguments make_parameters(const LossDefinition& loss, const std::map<std::string, std::string>& overrides) {
    LossArguments arguments;
    for (const ParamSpec& param : loss.params) arguments.params[param.name] = param.default_value;
    for (const auto& [name, value] : overrides) {
        auto known = std::find_if(loss.params.begin(), loss.params.end(),
                                  [&key = name](const ParamSpec& param) { return param.name == key; });
        NCE_CHECK(known != loss.params.end(), "{}: unknown parameter '{}'; {}", loss.name, name, parameter_list(loss));
        arguments.params[name] = value;
    }
    for (const ParamSpec& param : loss.params)
        if (std::optional<double> value = validate_parameter(loss, param, arguments.params[param.name]))
            arguments.numbers[param.name] = *value;
    return arguments;
}

LossArguments make_arguments(const LossDefinition& loss, const std::map<std::string, Tensor>& inputs,
                             const std::map<std::string, std::string>& overrides) {
    LossArguments arguments = make_parameters(loss, overrides);

    // Inputs the loss does not take are ignored.
    for (const InputSpec& spec : loss.inputs) {
        auto it = inputs.find(spec.name);
        if (it == inputs.end() || !it->second.defined()) {
            NCE_CHECK(!spec.required, "{}: required input {} is missing ({})", loss.name, spec.name, input_list(loss));
            continue;
        }
        const Tensor& value = it->second;
        bool differentiable = spec.kind == InputKind::Embedding || spec.kind == InputKind::Scalar;
        if (spec.kind != InputKind::Data)
            NCE_CHECK(is_floating(value.dtype()), "{}: input {} must be float32 or float64, got {}", loss.name,
                      spec.name, dtype_name(value.dtype()));
        // Embeddings and scalars are leaves that receive a gradient; guides and data are constants.
        arguments.inputs.emplace(spec.name, Var(value, differentiable));
    }
    return arguments;
}

}  // namespace nce::losses
