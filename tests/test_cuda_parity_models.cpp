// The CUDA backend against the CPU backend one level up: every loss of the registry (its
// value and the gradients of its differentiable inputs; the fused InfoNCE family takes its
// device sweep off the CPU, losses/infonce_rows.h), the nn modules forward and backward with dropout on, a
// sig_predictor trained 20 AdamW steps on each device, whose losses must follow each other,
// and a text_encoder trained and pretrained by the retrieval apps' own loops on each device.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>

#include "retrieval/train/pretraining.h"
#include "retrieval/embedding/run_device.h"
#include "retrieval/train/training.h"
#include "losses/losses.h"
#include "nn/embedding.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "nn/model.h"
#include "nn/optimizer.h"
#include "nn/transformer_encoder_layer.h"
#include "tests/cuda_parity_harness.h"

using namespace nce;
using namespace nce::testing;

namespace {

// A module built from `seed` on the CPU in `dtype` (the CUDA run moves it with to()).
using MakeModule = std::function<std::unique_ptr<nn::Module>(Generator& generator, Dtype dtype)>;
// Its forward on inputs made on `device`; `generator` draws the dropout masks.
using ForwardModule = std::function<Var(nn::Module&, const std::vector<Var>& inputs, Device, Generator&)>;

// Builds the module twice from the same seed, moves one copy to the CUDA device, runs both
// forwards in training mode (dropout on, the same seed) on the same inputs, back-propagates
// the same upstream gradient, and compares the output, the float inputs' gradients and
// every parameter's gradient, by name.
void check_module_parity(const std::string& name, const MakeModule& make, const ForwardModule& forward,
                         const std::vector<Tensor>& inputs) {
    for (Dtype dtype : {Dtype::Float64, Dtype::Float32}) {
        INFO(name << " in " << std::string(dtype_name(dtype)));
        struct Run {
            Tensor output;
            std::vector<Tensor> grads;
        };
        auto run = [&](Device device) {
            Generator init(5);
            std::unique_ptr<nn::Module> module = make(init, dtype);
            module->to(device);
            std::vector<Var> leaves;
            for (const Tensor& input : inputs)
                leaves.push_back(is_floating(input.dtype()) ? Var::parameter(input.to(dtype).to(device))
                                                            : Var(input.to(device)));
            Generator dropout(77);
            Var output = forward(*module, leaves, device, dropout);
            REQUIRE(output.value().device() == device);
            output.backward(parity_values(output.shape(), 978).to(dtype).to(device));
            Run result{output.value(), {}};
            for (const Var& leaf : leaves)
                if (leaf.requires_grad()) result.grads.push_back(leaf.grad());
            for (const auto& [parameter_name, parameter] : module->named_parameters()) {
                REQUIRE(parameter->value().device() == device);
                result.grads.push_back(parameter->grad());
            }
            return result;
        };
        const Run cpu = run(Device::CPU), cuda = run(Device::CUDA);
        check_close(cuda.output, cpu.output, name + ": forward");
        REQUIRE(cuda.grads.size() == cpu.grads.size());
        for (size_t k = 0; k < cpu.grads.size(); ++k)
            check_close(cuda.grads[k], cpu.grads[k], name + ": gradient " + std::to_string(k));
    }
}

// A [B, T] 0/1 mask (float64): row b keeps its first lengths[b] tokens.
Tensor token_mask(const std::vector<int64_t>& lengths, int64_t tokens) {
    std::vector<double> values;
    for (int64_t length : lengths)
        for (int64_t t = 0; t < tokens; ++t) values.push_back(t < length ? 1.0 : 0.0);
    return Tensor::from_vector(values, {static_cast<int64_t>(lengths.size()), tokens}, Dtype::Float64);
}

nn::ModelConfig small_sig_predictor() {
    nn::ModelConfig config;
    config.kind = "sig_predictor";
    config.in_dim = 6;
    config.d_model = 8;
    config.nhead = 2;
    config.dim_feedforward = 16;
    config.num_layers = 2;
    config.dropout = 0.1;
    config.out_dim = 5;
    return config;
}

// Whether a loss's code still reads tensors on the host (Tensor::at) or makes its constants
// there: on CUDA inputs it then stops with the engine's "host access", "not cuda" or
// "different devices" error.
bool loss_reads_the_host(const std::string& name) {
    try {
        const losses::LossDefinition& loss = losses::find_loss(name);
        Generator draw(11);
        losses::LossArguments arguments = losses::make_parameters(loss, {});
        for (const auto& [input, value] : loss.example(draw, 5, 4)) arguments.inputs.emplace(input, Var(value.to(Device::CUDA)));
        return loss.compute(arguments).value().device() != Device::CUDA;  // its value made on the host
    } catch (const Error& error) {
        const std::string message = error.what();
        return message.find("host access") != std::string::npos || message.find("not cuda") != std::string::npos ||
               message.find("different devices") != std::string::npos;
    }
}

}  // namespace

TEST_CASE("cuda parity: every loss of the registry that runs on the device, value and gradients") {
    std::vector<std::string> host_only;
    for (const losses::LossDefinition& loss : losses::all_losses()) {
        if (!loss.example || !loss.compute) continue;
        if (loss_reads_the_host(loss.name)) {
            host_only.push_back(loss.name);
            continue;
        }
        Generator draw(11);
        const std::map<std::string, Tensor> example = loss.example(draw, 5, 4);
        const losses::LossArguments defaults = losses::make_parameters(loss, {});
        for (Dtype dtype : {Dtype::Float64, Dtype::Float32}) {
            INFO(loss.name << " in " << std::string(dtype_name(dtype)));
            auto run = [&](Device device) {
                losses::LossArguments arguments = defaults;
                std::vector<std::string> differentiable;
                for (const losses::InputSpec& spec : loss.inputs) {
                    if (!example.count(spec.name)) continue;
                    Tensor value = example.at(spec.name);
                    if (is_floating(value.dtype())) value = value.to(dtype);
                    value = value.to(device);
                    const bool leaf = spec.kind == losses::InputKind::Embedding || spec.kind == losses::InputKind::Scalar;
                    arguments.inputs.emplace(spec.name, leaf ? Var::parameter(value) : Var(value));
                    if (leaf) differentiable.push_back(spec.name);
                }
                Var value = loss.compute(arguments);
                REQUIRE(value.value().device() == device);
                value.backward();
                std::vector<Tensor> results{value.value()};
                for (const std::string& input : differentiable) {
                    results.push_back(arguments.inputs.at(input).grad());
                    CHECK_MESSAGE(results.back().device() == device, input, "'s gradient is not on the device");
                }
                return results;
            };
            const std::vector<Tensor> cpu = run(Device::CPU), cuda = run(Device::CUDA);
            REQUIRE(cuda.size() == cpu.size());
            check_close(cuda[0], cpu[0], loss.name + ": value");
            for (size_t k = 1; k < cpu.size(); ++k)
                check_close(cuda[k], cpu[k], loss.name + ": gradient " + std::to_string(k));
        }
    }
    // Every loss computes on its inputs' device (the InfoNCE family through its device sweep):
    // one that falls back to the host fails here, by name.
    CHECK_MESSAGE(host_only.empty(), "losses that still read tensors on the host (not run on the device): "
                                         << fmt::format("{}", fmt::join(host_only, ", ")));
}

TEST_CASE("cuda parity: modules forward and backward (Linear, LayerNorm, Embedding, encoder layer)") {
    check_module_parity(
        "Linear", [](Generator& g, Dtype dtype) { return std::make_unique<nn::Linear>(6, 4, g, dtype); },
        [](nn::Module& m, const std::vector<Var>& x, Device, Generator&) {
            return static_cast<nn::Linear&>(m).forward(x[0]);
        },
        {parity_values({2, 3, 6}, 60)});
    check_module_parity(
        "LayerNorm", [](Generator&, Dtype dtype) { return std::make_unique<nn::LayerNorm>(6, 1e-5, dtype); },
        [](nn::Module& m, const std::vector<Var>& x, Device, Generator&) {
            return static_cast<nn::LayerNorm&>(m).forward(x[0] * 2.0 + 1.0);
        },
        {parity_values({4, 6}, 61)});
    check_module_parity(
        "Embedding", [](Generator& g, Dtype dtype) { return std::make_unique<nn::Embedding>(7, 3, g, dtype); },
        [](nn::Module& m, const std::vector<Var>& ids, Device, Generator&) {
            return static_cast<nn::Embedding&>(m).forward(ids[0].value());
        },
        {Tensor::from_indices({6, 0, 3, 3, 6, 1}, {2, 3})});
    const Tensor mask = token_mask({5, 3}, 5);
    for (bool norm_first : {false, true})
        for (nn::Activation activation : {nn::Activation::Relu, nn::Activation::Gelu}) {
            nn::TransformerEncoderLayerOptions options;
            options.d_model = 8;
            options.nhead = 2;
            options.dim_feedforward = 12;
            options.dropout = 0.2;
            options.activation = activation;
            options.norm_first = norm_first;
            check_module_parity(
                fmt::format("TransformerEncoderLayer norm_first {} {}", norm_first, nn::activation_name(activation)),
                [options](Generator& g, Dtype dtype) {
                    return std::make_unique<nn::TransformerEncoderLayer>(options, g, dtype);
                },
                [&mask](nn::Module& m, const std::vector<Var>& x, Device device, Generator& dropout) {
                    return static_cast<nn::TransformerEncoderLayer&>(m).forward(x[0], mask.to(device), &dropout);
                },
                {parity_values({2, 5, 8}, 62)});
        }
}

TEST_CASE("cuda parity: TextEncoder and SigPredictor forward and backward, dropout on") {
    nn::ModelConfig text;
    text.kind = "text_encoder";
    text.vocab_size = 11;
    text.max_len = 6;
    text.d_model = 8;
    text.nhead = 2;
    text.dim_feedforward = 16;
    text.num_layers = 2;
    text.dropout = 0.1;
    text.out_dim = 4;
    const Tensor ids = Tensor::from_indices({1, 5, 9, 2, 0, 0, 3, 10, 4, 4, 7, 0}, {2, 6});
    const Tensor text_mask = token_mask({4, 6}, 6);
    check_module_parity(
        "TextEncoder", [text](Generator& g, Dtype dtype) { return nn::make_model(text, g, dtype); },
        [&](nn::Module& m, const std::vector<Var>&, Device device, Generator& dropout) {
            return static_cast<nn::EmbeddingModel&>(m).encode(ids.to(device), text_mask.to(device), &dropout);
        },
        {});
    // The term-weight head: its index_add scatter of token weights into [B * vocab_size] on the
    // device, and its backward (index_select of the gradient). Row 1 repeats piece 4.
    nn::ModelConfig terms = text;
    terms.term_weights = true;
    check_module_parity(
        "TextEncoder with term weights", [terms](Generator& g, Dtype dtype) { return nn::make_model(terms, g, dtype); },
        [&](nn::Module& m, const std::vector<Var>&, Device device, Generator& dropout) {
            return static_cast<nn::EmbeddingModel&>(m).encode(ids.to(device), text_mask.to(device), &dropout);
        },
        {});
    const Tensor features = parity_values({3, 4, 6}, 63);
    const Tensor mask = token_mask({4, 2, 3}, 4);
    check_module_parity(
        "SigPredictor", [](Generator& g, Dtype dtype) { return nn::make_model(small_sig_predictor(), g, dtype); },
        [&](nn::Module& m, const std::vector<Var>&, Device device, Generator& dropout) {
            return static_cast<nn::EmbeddingModel&>(m).encode(features.to(device), mask.to(device), &dropout);
        },
        {});
}

TEST_CASE("cuda parity: a sig_predictor trained 20 AdamW steps on CUDA follows the CPU run's losses") {
    for (Dtype dtype : {Dtype::Float64, Dtype::Float32}) {
        INFO("in " << std::string(dtype_name(dtype)));
        auto train = [dtype](Device device) {
            Generator init(21), data(22), dropout(23);
            std::unique_ptr<nn::EmbeddingModel> model = nn::make_model(small_sig_predictor(), init, dtype);
            model->to(device);
            nn::AdamWOptions options;
            options.learning_rate = 3e-3;
            nn::AdamW optimizer(model->parameters(), options);
            const Tensor mask = token_mask({4, 3, 4, 2, 1, 4}, 4).to(device);
            const Tensor queries = data.normal({6, 4, 6}, Dtype::Float64).to(dtype).to(device);
            const Tensor positives = queries + data.normal({6, 4, 6}, Dtype::Float64).to(dtype).to(device) * 0.3;
            std::vector<double> losses;
            for (int step = 0; step < 20; ++step) {
                optimizer.zero_grad();
                Var loss = losses::infonce(model->encode(queries, mask, &dropout), model->encode(positives, mask, &dropout),
                                           Var(), Var(), 0.1);
                loss.backward();
                optimizer.step();
                losses.push_back(loss.value().to(Device::CPU).item());
            }
            return losses;
        };
        const std::vector<double> cpu = train(Device::CPU), cuda = train(Device::CUDA);
        CHECK(cpu.back() < cpu.front());  // it learns
        const double tolerance = dtype == Dtype::Float64 ? 1e-10 : 1e-4;
        for (size_t step = 0; step < cpu.size(); ++step)
            CHECK_MESSAGE(std::abs(cuda[step] - cpu[step]) <= tolerance * std::abs(cpu[step]),
                          "step " << step << ": cuda " << cuda[step] << ", cpu " << cpu[step]);
    }
}

namespace {

// A tiny corpus: passage i tells of one place, query i asks for it, each pair its own group;
// the pairs score 1 and 0.5 in turn (cosent learns from the difference, rank_infonce from both).
data::RetrievalDataset tiny_corpus(int first, int count) {
    const std::vector<std::string> places = {"river", "bridge", "market", "harbor", "garden", "castle",
                                             "forest", "mill", "tower", "square", "chapel", "meadow"};
    data::RetrievalDataset dataset;
    dataset.name = "tiny";
    for (int i = first; i < first + count; ++i) {
        const std::string& place = places[static_cast<size_t>(i)];
        const std::string group = "g" + std::to_string(i);
        dataset.passages.push_back({"p" + std::to_string(i), "the " + place + " of the old town opens early. "
                                    "visitors walk to the " + place + " every morning", group});
        dataset.queries.push_back({"q" + std::to_string(i), "when does the " + place + " open", group});
        const int64_t row = i - first;
        dataset.relevance.push_back({row, row, row % 2 == 0 ? 1.0 : 0.5});
    }
    return dataset;
}

// The loss of every step a trainer logged (JSON lines, "event": "step").
std::vector<double> logged_losses(const std::string& log_path) {
    std::vector<double> losses;
    std::ifstream log(log_path);
    for (std::string line; std::getline(log, line);) {
        nlohmann::json record = nlohmann::json::parse(line);
        if (record.at("event") == "step") losses.push_back(record.at("loss").get<double>());
    }
    return losses;
}

// Each step's loss of the CUDA run within 1e-5 relative of the CPU run's (float32).
void check_losses_follow(const std::vector<double>& cuda, const std::vector<double>& cpu, size_t steps) {
    REQUIRE(cpu.size() == steps);
    REQUIRE(cuda.size() == cpu.size());
    for (size_t step = 0; step < cpu.size(); ++step)
        CHECK_MESSAGE(std::abs(cuda[step] - cpu[step]) <= parity_tolerance(Dtype::Float32) * std::abs(cpu[step]),
                      "step " << step + 1 << ": cuda " << cuda[step] << ", cpu " << cpu[step]);
}

}  // namespace

TEST_CASE("cuda parity: the retrieval apps' training and pretraining loops on CUDA follow the CPU runs") {
    namespace fs = std::filesystem;
    const fs::path folder = fs::temp_directory_path() / fmt::format("nce_test_cuda_retrieval_{}", getpid());
    fs::remove_all(folder);
    fs::create_directories(folder);
    const data::RetrievalDataset train = tiny_corpus(0, 8), validation = tiny_corpus(8, 4);
    std::vector<std::string> texts;  // the tokenizer's, and the texts encoded after training
    for (const data::RetrievalDataset* split : {&train, &validation}) {
        for (const data::Query& query : split->queries) texts.push_back(query.text);
        for (const data::Passage& passage : split->passages) texts.push_back(passage.text);
    }
    data::TokenizerOptions tokenizer_options;
    tokenizer_options.vocab_size = 60;
    tokenizer_options.character_coverage = 1.0;
    tokenizer_options.exact_vocab_size = false;
    const data::Tokenizer tokenizer = data::Tokenizer::train(texts, tokenizer_options, folder.string());

    retrieval::RunConfig config;
    config.d_model = 8;
    config.nhead = 2;
    config.num_layers = 1;
    config.dim_feedforward = 16;
    config.max_query_length = 8;
    config.max_passage_length = 12;
    config.batch_size = 4;
    config.max_steps = 6;
    config.warmup_steps = 2;
    config.learning_rate = 3e-3;
    config.evaluate_every = 3;  // the best checkpoint is written from the device and read back onto it
    config.encode_batch_size = 8;
    config.pretrain_steps = 3;
    config.pretrain_batch_size = 4;
    config.seed = 5;

    // A run on `device`: its per-step losses, the model's embeddings of every text (copied back
    // to the host) and those of its saved model.safetensors, loaded on the host.
    struct Run {
        std::vector<double> losses;
        Tensor embeddings, saved_embeddings;
        double metric = 0;
    };
    auto embed_all = [&](nn::EmbeddingModel& model) {
        return retrieval::encode_texts(model, tokenizer, texts, config.max_passage_length, config.encode_batch_size);
    };
    auto train_on = [&](Device device, const retrieval::RunConfig& run_config) {
        retrieval::RunConfig on_device = run_config;
        on_device.device = device;
        const fs::path output = folder / fmt::format("{}_{}_{}", run_config.loss, run_config.mini_batch_size,
                                                     device_name(device));
        retrieval::create_output_folder(output.string());
        const retrieval::RunFiles files(output.string());
        auto model =
            retrieval::to_run_device(retrieval::make_text_encoder(on_device, tokenizer.vocab_size()), on_device.device);
        retrieval::TrainingReport report =
            retrieval::train_text_encoder(*model, tokenizer, train, validation, on_device, files);
        REQUIRE(retrieval::model_device(*model) == device);
        return Run{logged_losses(files.log), embed_all(*model),
                   embed_all(*retrieval::load_text_encoder(files.model)), report.result.best_metric.value_or(-1)};
    };
    struct Case {
        std::string loss;
        int64_t mini_batch_size;
    };
    for (const Case& c : {Case{"infonce", 0}, Case{"infonce", 2}, Case{"infonce_symmetric", 0},
                          Case{"multi_positive", 0}, Case{"rank_infonce", 0}, Case{"hard_negative_infonce", 0},
                          Case{"cosent", 0}, Case{"contrastive", 0}, Case{"triplet", 0}, Case{"matryoshka", 0}}) {
        const std::string name = c.mini_batch_size > 0 ? c.loss + " through GradCache" : c.loss;
        INFO(name);
        retrieval::RunConfig run_config = config;
        run_config.loss = c.loss;
        run_config.mini_batch_size = c.mini_batch_size;
        if (c.loss == "matryoshka") run_config.loss_parameters = {{"dims", "4,8"}, {"weights", "1,1"}};
        const Run cpu = train_on(Device::CPU, run_config), cuda = train_on(Device::CUDA, run_config);
        check_losses_follow(cuda.losses, cpu.losses, static_cast<size_t>(config.max_steps));
        check_close(cuda.embeddings, cpu.embeddings, "the trained model's embeddings");
        check_close(cuda.saved_embeddings, cuda.embeddings, "the CUDA run's saved model, on the host");
        CHECK(cuda.metric == doctest::Approx(cpu.metric));
    }

    // Corpus pretraining (imitating BM25): its losses and the model it leaves. (Its top-1 figures
    // are left out: a tiny model's near ties may rank differently at float32's last bits.)
    auto pretrain_on = [&](Device device) {
        retrieval::RunConfig on_device = config;
        on_device.device = device;
        auto model =
            retrieval::to_run_device(retrieval::make_text_encoder(on_device, tokenizer.vocab_size()), on_device.device);
        const std::string log = (folder / fmt::format("pretrain_{}.jsonl", device_name(device))).string();
        retrieval::pretrain_text_encoder(*model, tokenizer, train.passages, eval::LexicalTokens::Whitespace, 4,
                                         on_device, log);
        return Run{logged_losses(log), embed_all(*model), Tensor(), 0};
    };
    const Run cpu_pretrained = pretrain_on(Device::CPU);
    const Run cuda_pretrained = pretrain_on(Device::CUDA);
    check_losses_follow(cuda_pretrained.losses, cpu_pretrained.losses, static_cast<size_t>(config.pretrain_steps));
    check_close(cuda_pretrained.embeddings, cpu_pretrained.embeddings, "the pretrained model's embeddings");
    fs::remove_all(folder);
}
