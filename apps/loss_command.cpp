// nce loss NAME --inputs DIR --out DIR [--set key=value]... [--dtype float64|float32]
// nce loss --list
//
// Computes one loss of the catalogue (docs/losses_contract.md) on inputs read from DIR/<input>.npy
// and writes OUT/loss.npy and OUT/grad_<input>.npy (float64) for every differentiable input
// it read. Everything is read, validated and computed before the first file is written; if
// writing fails, the files this run wrote are removed again. Errors are one line.
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "apps/commands.h"
#include "apps/loss_inputs.h"
#include "engine/nce.h"
#include "losses/losses.h"

namespace nce::apps {
namespace {

namespace fs = std::filesystem;

struct LossOptionsCli {
    std::string name;
    std::string inputs_dir;
    std::string out_dir;
    std::vector<std::string> settings;  // "key=value"
    std::string dtype = "float64";
    bool list = false;
};

// Writes every (path, tensor) or nothing: on a failure, removes the files already written
// (and the output folder if this run created it) and reports the file it could not write.
void write_all_or_nothing(const std::vector<std::pair<fs::path, Tensor>>& outputs, const fs::path& out_dir) {
    std::error_code error_code;
    bool created_folder = !fs::exists(out_dir);
    if (created_folder) {
        fs::create_directories(out_dir, error_code);
        NCE_CHECK(!error_code, "cannot create output folder {}: {}", out_dir.string(), error_code.message());
    }
    NCE_CHECK(fs::is_directory(out_dir), "output path {} exists and is not a folder", out_dir.string());
    std::vector<fs::path> written;
    for (const auto& [path, tensor] : outputs) {
        try {
            write_npy(path.string(), tensor);
            written.push_back(path);
        } catch (const std::exception& failure) {
            for (const fs::path& done : written) fs::remove(done, error_code);
            if (created_folder) fs::remove(out_dir, error_code);  // removes it only if empty
            std::string message = failure.what();
            if (message.find(path.string()) == std::string::npos)
                message = fmt::format("cannot write {}: {}", path.string(), message);
            throw Error(message + "; nothing was written");
        }
    }
}

void print_catalogue() {
    for (const losses::LossDefinition& loss : losses::all_losses()) {
        std::vector<std::string> inputs, params;
        for (const losses::InputSpec& input : loss.inputs)
            inputs.push_back(input.required ? input.name : "[" + input.name + "]");
        for (const losses::ParamSpec& param : loss.params) {
            std::string text = param.name + "=" + param.default_value;
            if (!param.choices.empty()) text += " (" + fmt::format("{}", fmt::join(param.choices, "|")) + ")";
            params.push_back(text);
        }
        fmt::print("{:<22} inputs: {:<36} params: {}\n", loss.name, fmt::format("{}", fmt::join(inputs, " ")),
                   params.empty() ? "none" : fmt::format("{}", fmt::join(params, " ")));
    }
    fmt::print("[name] = optional input\n");
}

int run(const LossOptionsCli& options) {
    if (options.list) {
        print_catalogue();
        return 0;
    }
    NCE_CHECK(!options.name.empty(), "loss: name a loss (nce loss --list shows them)");
    const losses::LossDefinition& loss = losses::find_loss(options.name);
    NCE_CHECK(!options.inputs_dir.empty(), "{}: --inputs DIR is required (the folder of <input>.npy files)", loss.name);
    NCE_CHECK(!options.out_dir.empty(), "{}: --out DIR is required (where loss.npy and grad_<input>.npy go)", loss.name);
    Dtype dtype = parse_dtype(options.dtype);
    std::map<std::string, std::string> overrides = parse_settings(options.settings, loss.name);

    // 1. Read every input the loss takes; a required one must be there.
    std::map<std::string, Tensor> inputs = read_loss_inputs(loss, options.inputs_dir, dtype);

    // 2. Validate parameters and inputs, compute the loss and its gradients.
    losses::LossArguments arguments = losses::make_arguments(loss, inputs, overrides);
    Var value = loss.compute(arguments);
    NCE_CHECK(value.value().numel() == 1, "{}: the loss came out with shape {}, not one element", loss.name,
              shape_string(value.shape()));
    double loss_value = value.value().item();
    NCE_CHECK(std::isfinite(loss_value), "{}: the loss is {} for these inputs; nothing was written", loss.name,
              loss_value);
    if (value.requires_grad()) value.backward();

    // 3. Collect the outputs: the loss, then a gradient for every float input it read that
    //    is not data (guides get zeros: they only choose a mask).
    fs::path out_dir = options.out_dir;
    std::vector<std::pair<fs::path, Tensor>> outputs{{out_dir / "loss.npy", Tensor::scalar(loss_value, Dtype::Float64)}};
    for (const losses::InputSpec& spec : loss.inputs) {
        if (spec.kind == losses::InputKind::Data || !arguments.has(spec.name)) continue;
        const Var& input = arguments.input(spec.name);
        Tensor grad = input.grad();
        grad = grad.defined() ? grad.to(Dtype::Float64) : Tensor::zeros(input.shape(), Dtype::Float64);
        NCE_CHECK(all_finite(grad), "{}: the gradient of {} is not finite for these inputs; nothing was written",
                  loss.name, spec.name);
        outputs.emplace_back(out_dir / ("grad_" + spec.name + ".npy"), grad);
    }

    // 4. Write them all, or nothing.
    write_all_or_nothing(outputs, out_dir);
    fmt::print("{}: loss {:.17g} ({}); wrote {} files to {}\n", loss.name, loss_value, dtype_name(dtype), outputs.size(),
               out_dir.string());
    return 0;
}

}  // namespace

void add_loss_command(CLI::App& app, int& exit_code) {
    auto options = std::make_shared<LossOptionsCli>();
    CLI::App* command = app.add_subcommand(
        "loss", "Compute a loss and the gradient of each differentiable input from .npy files");
    command->add_option("name", options->name, "The loss (nce loss --list shows every loss, its inputs and parameters)");
    command->add_option("--inputs", options->inputs_dir, "Folder holding <input>.npy for each input the loss takes");
    command->add_option("--out", options->out_dir,
                        "Folder for loss.npy and grad_<input>.npy (float64); created if missing");
    command->add_option("--set", options->settings, "Override a parameter, key=value (repeatable): --set tau=0.07")
        ->allow_extra_args(false);
    command->add_option("--dtype", options->dtype, "Compute in float64 (default) or float32");
    command->add_flag("--list", options->list, "List every loss with its inputs and parameters (defaults)");
    command->callback([options, &exit_code] { exit_code = run(*options); });
}

}  // namespace nce::apps
