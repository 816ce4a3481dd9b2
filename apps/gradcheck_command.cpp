// nce gradcheck [NAME|--all] [--dtype float64|float32] [--seed S] [--verbose]
//
// Runs the hand-derived backward of every registered op (or the one named) against central
// finite differences and prints one row per check; exits 0 only when all pass.
#include <fmt/core.h>

#include <algorithm>
#include <string>

#include "apps/commands.h"
#include "engine/nce.h"
#include "losses/loss.h"
#include "nn/module_checks.h"

namespace nce::apps {
namespace {

struct GradcheckOptionsCli {
    std::string name;
    bool all = false;
    std::string dtype = "float64";
    uint64_t seed = 1;
    bool verbose = false;
};

void print_jacobians(const InputReport& report) {
    fmt::print("    input {} {}: analytic | numeric Jacobian ({} output x {} input elements)\n", report.index,
               shape_string(report.shape), report.rows, report.columns);
    for (int64_t r = 0; r < report.rows; ++r) {
        std::string analytic, numeric;
        for (int64_t c = 0; c < report.columns; ++c) {
            analytic += fmt::format("{:>10.5f}", report.analytic[r * report.columns + c]);
            numeric += fmt::format("{:>10.5f}", report.numeric[r * report.columns + c]);
        }
        fmt::print("    {} | {}\n", analytic, numeric);
    }
}

int run(const GradcheckOptionsCli& options) {
    CheckRegistry registry;
    register_engine_checks(registry);
    losses::register_loss_checks(registry);  // every loss, by its name
    nn::register_module_checks(registry);    // every nn module and the three models
    std::vector<std::string> ops = registry.ops();
    NCE_CHECK(options.all || !options.name.empty(), "gradcheck: name an op or pass --all (ops: {})", fmt::join(ops, ", "));
    NCE_CHECK(options.all || std::find(ops.begin(), ops.end(), options.name) != ops.end(),
              "gradcheck: unknown op '{}'; known ops: {}", options.name, fmt::join(ops, ", "));
    Dtype dtype = parse_dtype(options.dtype);

    fmt::print("gradcheck: central differences, {} (threads {}, seed {})\n", dtype_name(dtype), num_threads(),
               options.seed);
    fmt::print("{:<22} {:<40} {:>12} {:>12}  {}\n", "op", "inputs", "max abs err", "max rel err", "result");
    int passed = 0, failed = 0;
    double tolerance = 0;
    for (const CheckCase& check : registry.cases()) {
        if (!options.all && check.op != options.name) continue;
        GradcheckResult result = run_check(check, dtype, options.seed);
        tolerance = result.tolerance;
        fmt::print("{:<22} {:<40} {:>12.3e} {:>12.3e}  {}\n", check.op, check.description, result.max_abs_error,
                   result.max_rel_error, result.passed ? "pass" : "FAIL");
        if (options.verbose)
            for (const InputReport& report : result.inputs)
                if (report.full_jacobian && report.rows * report.columns <= 400) print_jacobians(report);
        (result.passed ? passed : failed)++;
    }
    fmt::print("{} passed, {} failed (tolerance {:.0e} on the relative error)\n", passed, failed, tolerance);
    return failed == 0 ? 0 : 1;
}

}  // namespace

void add_gradcheck_command(CLI::App& app, int& exit_code) {
    auto options = std::make_shared<GradcheckOptionsCli>();
    CLI::App* command = app.add_subcommand(
        "gradcheck", "Check every op's hand-derived backward against central finite differences");
    command->add_option("name", options->name, "The op to check (see --all for the list)");
    command->add_flag("--all", options->all, "Check every registered op");
    command->add_option("--dtype", options->dtype, "float64 (default) or float32")
        ->check(CLI::IsMember({"float64", "float32"}));
    command->add_option("--seed", options->seed, "Seed for the random inputs and directions");
    command->add_flag("--verbose", options->verbose,
                      "Print analytic and numeric Jacobians side by side for the small cases");
    command->callback([options, &exit_code] { exit_code = run(*options); });
}

}  // namespace nce::apps
