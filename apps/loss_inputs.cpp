// Reading a loss's inputs from .npy files, for `nce loss` and `nce graph`.
#include "apps/loss_inputs.h"

#include <fmt/core.h>

#include <filesystem>

namespace nce::apps {
namespace {

namespace fs = std::filesystem;

// Reads one input file and brings it to the dtype the loss computes in: embeddings,
// scalars, guides, score and label are float (converted to `dtype`); qid is int64; rank is
// int64 or float.
Tensor read_input(const losses::InputSpec& spec, const fs::path& file, Dtype dtype) {
    Tensor value;
    try {
        value = read_npy(file.string());
    } catch (const Error& error) {
        std::string message = error.what();
        if (message.find(file.string()) == std::string::npos) message = fmt::format("{}: {}", file.string(), message);
        throw Error(message);
    }
    if (spec.name == "qid") {
        NCE_CHECK(value.dtype() == Dtype::Int64, "{}: qid must be int64, got {}", file.string(), dtype_name(value.dtype()));
        return value;
    }
    if (spec.name == "rank" && value.dtype() == Dtype::Int64) return value;
    NCE_CHECK(is_floating(value.dtype()), "{}: {} must be float32 or float64, got {}", file.string(), spec.name,
              dtype_name(value.dtype()));
    return value.to(dtype);
}

}  // namespace

// "--set tau=0.07" -> {"tau": "0.07"}; a parameter set twice is an error.
std::map<std::string, std::string> parse_settings(const std::vector<std::string>& settings, const std::string& loss) {
    std::map<std::string, std::string> overrides;
    for (const std::string& setting : settings) {
        size_t equals = setting.find('=');
        NCE_CHECK(equals != std::string::npos && equals > 0, "{}: --set expects key=value (e.g. --set tau=0.07), got '{}'",
                  loss, setting);
        std::string key = setting.substr(0, equals);
        NCE_CHECK(!overrides.count(key), "{}: parameter {} is set twice with --set; give it once", loss, key);
        overrides[key] = setting.substr(equals + 1);
    }
    return overrides;
}

std::map<std::string, Tensor> read_loss_inputs(const losses::LossDefinition& loss, const std::string& inputs_dir,
                                               Dtype dtype) {
    fs::path folder = inputs_dir;
    NCE_CHECK(fs::is_directory(folder), "{}: input folder {} does not exist", loss.name, folder.string());
    std::map<std::string, Tensor> inputs;
    for (const losses::InputSpec& spec : loss.inputs) {
        fs::path file = folder / (spec.name + ".npy");
        if (!fs::exists(file)) {
            NCE_CHECK(!spec.required, "{}: missing input file {} ({} is required)", loss.name, file.string(), spec.name);
            continue;
        }
        inputs[spec.name] = read_input(spec, file, dtype);
    }
    return inputs;
}

}  // namespace nce::apps
