// The model card of a trained run (model_card.h).
#include "retrieval/report/model_card.h"

#include <fmt/format.h>

namespace nce::retrieval {
namespace {

// A markdown table of the metric table: one row per ranker, "value [low, high]" cells, and
// the mark column where the table has one.
std::string markdown_table(const MetricTable& table) {
    std::string text = "| ranker |";
    std::string rule = "|---|";
    for (const std::string& column : table.columns) {
        text += " " + column + " |";
        rule += "---|";
    }
    bool with_marks = !table.mark_column.empty();
    if (with_marks) {
        text += " " + table.mark_column + " |";
        rule += "---|";
    }
    text += "\n" + rule + "\n";
    for (const MetricRow& row : table.rows) {
        text += "| " + row.name + " |";
        for (const std::string& column : table.columns) {
            auto value = row.metrics.find(column);
            auto interval = row.intervals.find(column);
            std::string cell = value == row.metrics.end()
                                   ? ""
                                   : format_metric_cell(value->second,
                                                        interval == row.intervals.end() ? nullptr : &interval->second);
            text += " " + cell + " |";
        }
        if (with_marks) text += " " + row.mark + " |";
        text += "\n";
    }
    return text;
}

std::string fact(const nlohmann::json& facts, const char* key) {
    if (!facts.contains(key)) return "-";
    const nlohmann::json& value = facts.at(key);
    return value.is_string() ? value.get<std::string>() : value.dump();
}

// A prompt as it reads in the card: in quotes (JSON's), so its spaces show; "" for none.
// (Built by appending: GCC 12 warns -Wrestrict, falsely, on "`" + string + "`" at -O3.)
std::string quoted(const std::string& prompt) {
    std::string text = "`";
    text += nlohmann::json(prompt).dump();
    return text + "`";
}

std::string split_line(const nlohmann::json& facts) {
    if (!facts.contains("split")) return "";
    const nlohmann::json& split = facts.at("split");
    std::string line = "- Split (queries / passages):";
    for (const char* side : {"train", "validation", "test"})
        if (split.contains(side))
            line += fmt::format(" {} {} / {};", side, split.at(side).value("queries", 0), split.at(side).value("passages", 0));
    line.back() = '\n';
    return line;
}

}  // namespace

std::string model_card_markdown(const std::string& command, const RunConfig& config, const MetricTable& table,
                                const nlohmann::json& facts) {
    std::string loss_parameters;
    for (const auto& [name, value] : config.loss_parameters) loss_parameters += fmt::format(" {}={}", name, value);
    std::string start = !config.init.empty() ? "fine-tuned from " + config.init
                        : facts.contains("pretraining")
                            ? "fresh, then pretrained on the corpus imitating BM25 (pretrained.safetensors)"
                            : "fresh (random initialisation, seed " + std::to_string(config.seed) + ")";
    const nlohmann::json training = facts.value("training", nlohmann::json::object());
    const bool prompted = !config.query_prompt.empty() || !config.passage_prompt.empty();
    std::string card;
    card += fmt::format("# {}: a text encoder trained by `{}`\n\n", config.output, command);
    card += "## What it is\n\n";
    const bool term_weights = has_term_weights(config);
    const int64_t pieces = facts.value("tokenizer_pieces", int64_t{0});
    std::string heads = "masked mean pooling";
    if (lexical_width(config) > 0) heads += fmt::format(", a max-pooled lexical head of {}", lexical_width(config));
    if (term_weights) heads += fmt::format(", term weights over the {} pieces", pieces);
    const nlohmann::json model = facts.value("model", nlohmann::json::object());
    const bool pretrained = model.value("kind", "") == "bert";  // read from a sentence-transformers folder
    if (pretrained)
        card += fmt::format("- Model: bert as Hugging Face defines it, from {}: d_model {}, {} layers, {} heads, "
                            "feed-forward {}; {} pooling{}; embeddings of {} numbers.\n",
                            config.init, model.value("d_model", 0), model.value("num_layers", 0), model.value("nhead", 0),
                            model.value("dim_feedforward", 0), model.value("pooling", "mean"),
                            model.value("normalize", false) ? ", unit length" : "", model.value("d_model", 0));
    else
        card += fmt::format("- Model: text_encoder, d_model {}, {} layers, {} heads, feed-forward {}, dropout {}; "
                            "{}; unit-length embeddings of {} numbers.\n",
                            config.d_model, config.num_layers, config.nhead, config.dim_feedforward, config.dropout,
                            heads, config.d_model + lexical_width(config) + (term_weights ? pieces : 0));
    if (facts.contains("term_share")) {
        const nlohmann::json& share = facts.at("term_share");
        card += fmt::format("- Term share: the terms' part weighs {:.3f} of the score, chosen on the validation split "
                            "(MRR@10 {:.3f}; {:.3f} at the learned share, {:.3f}).\n",
                            share.value("share", 0.0), share.value("validation_mrr10", 0.0),
                            share.value("learned_validation_mrr10", 0.0), share.value("learned_share", 0.0));
    }
    if (facts.contains("kept_pretrained")) {
        const nlohmann::json& kept = facts.at("kept_pretrained");
        card += fmt::format("- Kept: the pretrained model (pretrained.safetensors): no fine-tuning step ranked the "
                            "validation split better (MRR@10 {:.3f}); model.safetensors is it, at its chosen term share.\n",
                            kept.value("validation_mrr10", 0.0));
    }
    if (pretrained)
        card += fmt::format("- Tokenizer: the pretrained model's own, {} pieces (kept in tokenizer/).\n",
                            fact(facts, "tokenizer_pieces"));
    else
        card += fmt::format("- Tokenizer: SentencePiece {} of {} pieces, trained on the training split "
                            "(tokenizer.model){}.\n",
                            data::tokenizer_model_type_name(config.tokenizer_type), fact(facts, "tokenizer_pieces"),
                            facts.value("tokenizer_identifier_words", false)
                                ? "; it reads names and words apart from case and punctuation (getLineNumber(x) and "
                                  "line_number as get line number ( x ) and line _ number)"
                                : "");
    card += fmt::format("- Lengths: queries cut at {} tokens, passages at {}{}.\n", config.max_query_length,
                        config.max_passage_length, prompted ? ", prompts included" : "");
    if (prompted)
        card += fmt::format("- Prompts: the model reads every query as {} + the query and every passage as {} + the "
                            "passage (saved in model.safetensors' config; index and search apply them).\n",
                            quoted(config.query_prompt), quoted(config.passage_prompt));
    card += "\n## What it learned from\n\n";
    card += fmt::format("- Data: {}\n", config.data.empty() ? "the app's generated default" : config.data);
    card += split_line(facts);
    card += fmt::format("- Start: {}\n", start);
    card += fmt::format("- Loss: {}{}; batch {}, {} steps planned, {} taken (stopped early: {}), AdamW lr {} "
                        "(weight decay {}), {} schedule with {} warm-up steps, gradient clipping {}\n",
                        config.loss, loss_parameters.empty() ? " (catalogue defaults)" : " with" + loss_parameters,
                        config.batch_size, config.max_steps, fact(training, "steps"), fact(training, "stopped_early"),
                        config.learning_rate, config.weight_decay, nn::schedule_kind_name(config.schedule), config.warmup_steps,
                        config.max_grad_norm);
    if (training.contains("best_step"))
        card += training.value("best_step", int64_t{0}) == 0
                    ? std::string("- Kept: the start, unchanged: no step ranked the validation split better.\n")
                    : fmt::format("- Kept: the checkpoint of step {} of {}, the best on the validation split "
                                  "(MRR@10 {:.3f}).\n",
                                  training.value("best_step", int64_t{0}), fact(training, "steps"),
                                  training.value("best_validation_mrr@10", 0.0));
    card += fmt::format("- Seed {}, {} threads, {:.0f} s for the whole run; every setting is in config.json.\n",
                        config.seed, fact(facts, "threads"), facts.value("seconds", 0.0));
    card += "\n## How well it retrieves\n\n";
    card += fmt::format("On the {} (each cell: the mean over its queries and its 95% bootstrap interval",
                        facts.value("test_split", std::string("test split")));
    if (!table.mark_column.empty())
        card += "; the last column: the row minus BM25 with a paired bootstrap test on the same queries, * where "
                "the difference is beyond the noise at 5%, which overlapping intervals do not decide";
    card += "):\n\n";
    card += markdown_table(table);
    card += "\n![the metric table as bars](metrics.svg)\n\n![training loss and validation MRR@10](training_curves.svg)\n";
    card += "\n## How to use it\n\n";
    card += "```sh\n";
    if (prompted) {
        card += fmt::format("nce encode --model {0}/model.safetensors --text queries.txt --prompt query --out q.npy    "
                            "# one query per line -> unit vectors\n",
                            config.output);
        card += fmt::format("nce encode --model {0}/model.safetensors --text passages.txt --prompt passage --out p.npy "
                            "# passages, after the passage prompt\n",
                            config.output);
    } else {
        card += fmt::format("nce encode --model {0}/model.safetensors --text texts.txt --out embeddings.npy  "
                            "# one text per line -> unit vectors\n",
                            config.output);
    }
    card += fmt::format("{0} eval --output {1}                              # the table again\n", command,
                        config.output);
    card += fmt::format("{0} index --output {1}                             # a FAISS index of every passage\n",
                        command, config.output);
    card += fmt::format("{0} search --output {1} \"your question\"            # the nearest passages\n", command,
                        config.output);
    card += "```\n\n";
    card += fmt::format("From Python (`import nce`, nce's docs/python.md): `model = nce.load_model(\"{0}/model.safetensors\")`, "
                        "`tokenizer = nce.Tokenizer(\"{0}/tokenizer.model\")`, then `model.embed(tokenizer, texts{1})` "
                        "gives one unit vector per text as a NumPy array.\n",
                        config.output, prompted ? ", prompt=\"query\"" : "");
    card += "From C++: `nn::load_model(\"model.safetensors\")` gives the model, `data::Tokenizer::load(\"tokenizer.model\")` "
            "its tokenizer; `model->encode(ids, mask)` returns one unit vector per text (see nn/model.h).\n";
    if (prompted)
        card += "Write `model->config().query_prompt` before a query and `passage_prompt` before a passage before "
                "tokenizing (`retrieval::with_prompt`); without them the model reads texts unlike those it learned from.\n";
    return card;
}

}  // namespace nce::retrieval
