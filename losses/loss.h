// The loss registry: every loss of docs/losses_contract.md, reachable by its name, with
// the inputs and parameters that page lists. `nce loss` and `nce gradcheck` use it; model
// code calls the typed functions in losses/losses.h directly.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/nce.h"

namespace nce::losses {

enum class InputKind {
    Embedding,  // a float matrix (or [Q,K,d] tensor) that gets a gradient
    Scalar,     // a one-element float (log_tau, log_scale, bias) that gets a gradient
    Guide,      // a float input that only chooses a mask (gist's ga, gp): gradient zero
    Data,       // qid, rank, score, label: constants, no gradient
};

struct InputSpec {
    std::string name;
    InputKind kind;
    bool required = true;
};

enum class ParamRule {
    Positive,      // > 0
    NonNegative,   // >= 0
    UnitInterval,  // 0 <= x < 1
    Flag,          // 0 or 1
    Choice,        // one of `choices`
    Text,          // any text, read and checked by the loss itself (matryoshka's dims and
                   // weights: lists whose checks need the inputs' shapes)
};

struct ParamSpec {
    std::string name;
    std::string default_value;          // as text: "0.05", "dot"
    ParamRule rule;
    std::vector<std::string> choices;   // for Choice
};

// What a loss is called with: every input it read (differentiable ones as leaf Vars, data
// as constant Vars) and every parameter, defaults filled in and validated. The numeric
// parameters are parsed once, by make_parameters, into `numbers`: a training step reads
// tau as a double, never from text.
class LossArguments {
public:
    std::map<std::string, Var> inputs;
    std::map<std::string, std::string> params;   // every parameter as given (text and choices are read here)
    std::map<std::string, double> numbers;       // the numeric ones, parsed and checked

    bool has(const std::string& input) const { return inputs.count(input) > 0; }
    const Var& input(const std::string& name) const;   // throws naming the missing input
    Var optional(const std::string& name) const;       // undefined Var when absent
    double number(const std::string& param) const;     // throws naming a parameter not in `numbers`
    const std::string& text(const std::string& param) const;
};

// One quantity of a derivation page, computed from a worked example's inputs.
struct DerivationStep {
    std::string name;     // as the page writes it: "l", "P", "G", "dq"
    std::string formula;  // how it is formed: "q p^T / tau"
    Tensor value;
};

// A worked example for the loss's page (docs/derivations/<name>.md): small inputs a student
// can follow by hand (N = 2, d = 2 where the loss allows it), and the page's intermediate
// quantities computed from them in plain tensor math, independently of the loss's kernel.
// A step named d<input> ("dq") is a gradient in closed form: it must equal the gradient the
// loss's backward returns for that input (losses/worked_example.h checks it).
struct WorkedExample {
    std::map<std::string, Tensor> inputs;       // float64 (int64 for qid, rank)
    std::map<std::string, std::string> params;  // parameters set away from their defaults
    std::function<std::vector<DerivationStep>(const LossArguments&)> steps;
};

struct LossDefinition {
    std::string name;
    std::vector<InputSpec> inputs;
    std::vector<ParamSpec> params;
    // Checks shapes and values (one clear line on error) and returns the scalar loss, whose
    // single node carries the hand-derived backward.
    std::function<Var(const LossArguments&)> compute;
    // A valid random problem with `rows` rows of dimension `dim` (float64; the caller
    // converts), for gradient checks and examples. Inputs are drawn away from kinks.
    std::function<std::map<std::string, Tensor>(Generator&, int64_t rows, int64_t dim)> example;
    // The page's worked example (`nce explain NAME` prints it).
    std::function<WorkedExample()> worked_example;
};

// Every registered loss, in the order of the spec's tables.
const std::vector<LossDefinition>& all_losses();
// Throws naming the unknown loss and listing the known ones.
const LossDefinition& find_loss(const std::string& name);

// Fills defaults, applies `overrides` (name -> text), validates every parameter against
// its rule (a parameter given is validated even where log_tau makes it unused) and every
// input's presence; throws one line naming the parameter or input and what is expected.
LossArguments make_arguments(const LossDefinition& loss, const std::map<std::string, Tensor>& inputs,
                             const std::map<std::string, std::string>& overrides);
// The parameters alone, as make_arguments fills and checks them (a model's training reads
// them before it has any input): arguments.inputs is empty.
LossArguments make_parameters(const LossDefinition& loss, const std::map<std::string, std::string>& overrides);

// Gradient checks for every loss (two shapes each), for `nce gradcheck`.
void register_loss_checks(CheckRegistry& registry);

}  // namespace nce::losses
