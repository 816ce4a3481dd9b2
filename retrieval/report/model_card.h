// The model card: a README.md in every trained run's folder, for whoever picks the folder up
// later. It says what was trained (the model's sizes, the tokenizer), on what (the data, the
// split's sizes, the start: fresh, pretrained or --init), with what (the loss and its
// parameters, the budget, the seed and threads), how well (the metric table with its 95%
// intervals, as markdown, and the two SVG pictures), and how to use it (the commands that
// evaluate, index and search with it, and how to load the checkpoint in C++).
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "retrieval/report/metric_table.h"
#include "retrieval/settings/run_config.h"

namespace nce::retrieval {

// The card's markdown. `command` is how the run is invoked ("nce korquad", "nce train");
// `facts` is what results.json holds beside the table (split sizes, training, seconds).
std::string model_card_markdown(const std::string& command, const RunConfig& config, const MetricTable& table,
                                const nlohmann::json& facts);

}  // namespace nce::retrieval
