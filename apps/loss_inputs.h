// What `nce loss` and `nce graph` share: a loss's inputs read from a folder of <input>.npy
// files, and the `--set key=value` overrides of its parameters.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "losses/losses.h"

namespace nce::apps {

// "--set tau=0.07" -> {"tau": "0.07"}; a parameter set twice is an error.
std::map<std::string, std::string> parse_settings(const std::vector<std::string>& settings, const std::string& loss);

// Every input `loss` takes, from DIR/<input>.npy: floats converted to `dtype` (qid int64;
// rank int64 or float). The folder must exist and hold every required input; one-line errors
// name the file.
std::map<std::string, Tensor> read_loss_inputs(const losses::LossDefinition& loss, const std::string& inputs_dir,
                                               Dtype dtype);

}  // namespace nce::apps
