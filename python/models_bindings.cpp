// Models (nn/model.h), checkpoints (nn/checkpoint.h) and optimizers (nn/optimizer.h): enough
// to write a training loop in Python.
//
//   model = nce.make_model({"kind": "text_encoder", "vocab_size": 500, "max_len": 64, "d_model": 64}, seed=0)
//   opt = nce.AdamW(model, lr=1e-3)
//   gen = nce.Generator(0)
//   loss = nce.train_step(model, opt, lambda: nce.infonce(model.encode(q_ids, q_mask, gen),
//                                                         model.encode(p_ids, p_mask, gen)))
//   model.save("model.safetensors"); nce.load_model("model.safetensors")
//
// model.parameters() hands out the model's own Vars (not copies): their .value and .grad are
// the ones the optimizer reads and writes.
#include <cmath>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "retrieval/model/text_model.h"
#include "nn/checkpoint.h"
#include "nn/clip_grad_norm.h"
#include "nn/model.h"
#include "nn/optimizer.h"
#include "nn/sentence_transformers_folder.h"
#include "python/bindings.h"
#include "python/numpy_conversion.h"

namespace nce::python {
namespace {

using nn::EmbeddingModel;

py::object json_to_python(const std::string& text) { return py::module_::import("json").attr("loads")(text); }

// A config from a dict: ModelConfig's defaults, then the dict's keys (the checkpoint's
// reader checks them: an unknown key or a bad value is a ValueError naming it).
nn::ModelConfig config_from_python(const py::dict& given) {
    py::object json = py::module_::import("json");
    py::dict merged = json.attr("loads")(nn::config_to_json(nn::ModelConfig{}));
    for (auto [key, value] : given) merged[key] = value;
    return nn::config_from_json(json.attr("dumps")(merged).cast<std::string>(), "make_model's config");
}

// The parameters an optimizer or clip_grad_norm works on: a Model's, or a list of Vars (or
// of (name, Var) pairs, as model.parameters() gives them). The Vars are the Python objects'
// own, so the caller must keep them alive (the optimizer keeps its argument alive).
std::vector<Var*> parameter_pointers(py::handle source) {
    if (py::isinstance<EmbeddingModel>(source)) return source.cast<EmbeddingModel&>().parameters();
    std::vector<Var*> pointers;
    for (py::handle item : source) {
        py::handle var = item;
        if (py::isinstance<py::tuple>(item) && py::len(item) == 2) var = item.cast<py::tuple>()[1];
        if (!py::isinstance<Var>(var)) throw py::type_error("nce: parameters must be a Model or a list of nce.Var");
        pointers.push_back(&var.cast<Var&>());
    }
    return pointers;
}

std::vector<std::string> text_list(py::handle texts) {
    if (py::isinstance<py::str>(texts)) throw py::type_error("nce: give a list of texts, not one string");
    return texts.cast<std::vector<std::string>>();
}

py::object embed_texts(EmbeddingModel& model, const data::Tokenizer& tokenizer, const TextList& texts,
                       std::optional<int64_t> max_length, int64_t batch_size, const std::string& prompt) {
    NCE_CHECK(model.config().kind != "sig_predictor", "embed: the model is a sig_predictor, which reads features, "
              "not texts; use encode(features, mask)");
    NCE_CHECK(batch_size > 0, "embed: batch_size must be > 0, got {}", batch_size);
    std::vector<std::string> all = text_list(texts.object);
    if (prompt == "query") all = retrieval::with_prompt(model.config().query_prompt, std::move(all));
    else if (prompt == "passage") all = retrieval::with_prompt(model.config().passage_prompt, std::move(all));
    else NCE_CHECK(prompt == "none", "embed: prompt must be query, passage or none; got '{}'", prompt);
    int64_t length = max_length.value_or(model.config().max_len);
    return tensor_to_numpy(retrieval::encode_texts(model, tokenizer, all, length, batch_size));
}

// One optimizer step: zero the gradients, loss_fn() -> backward -> clip (max_grad_norm > 0)
// -> step -> keep a learnable temperature in its range. Returns the loss as a float.
double train_step(EmbeddingModel& model, nn::Optimizer& optimizer, const py::function& loss_fn, double max_grad_norm) {
    optimizer.zero_grad();
    py::object output = loss_fn();
    if (!py::isinstance<Var>(output)) throw py::type_error("train_step: loss_fn must return an nce.Var");
    Var loss = output.cast<Var>();
    double value = loss.value().item();
    NCE_CHECK(std::isfinite(value), "train_step: the loss is {}; the parameters were not touched", value);
    loss.backward();
    if (max_grad_norm > 0) nn::clip_grad_norm(optimizer.parameters(), max_grad_norm);
    optimizer.step();
    model.clamp_temperature();
    return value;
}

// nce.load_model(path): a checkpoint file, or a model folder (sentence-transformers, or a bare
// Hugging Face encoder). The model carries its tokenizer as .tokenizer when one is found (the
// folder's own; a checkpoint's tokenizer.model or tokenizer/ beside it), else None, and what
// nce assumed of a folder as .notes.
py::object load_model_with_tokenizer(const std::string& path, const DtypeLike& dtype_like) {
    py::handle dtype = dtype_like.object;
    namespace fs = std::filesystem;
    py::object model, tokenizer = py::none();
    py::list notes;
    if (fs::is_directory(path)) {
        nn::PretrainedModel pretrained = nn::load_sentence_transformers(path, dtype_from_python(dtype));
        for (const std::string& note : pretrained.notes) notes.append(note);
        model = py::cast(std::move(pretrained.model));
        tokenizer = py::cast(data::Tokenizer::load(path));
    } else {
        model = py::cast(nn::load_model(path, dtype_from_python(dtype)));
        std::string beside = retrieval::tokenizer_beside(fs::path(path).parent_path().string());
        if (!beside.empty()) tokenizer = py::cast(data::Tokenizer::load(beside));
    }
    model.attr("tokenizer") = tokenizer;
    model.attr("notes") = notes;
    return model;
}

// model.encode(texts, batch_size=, prompt=): the model's own tokenizer (load_model's), as nce encode.
py::object encode_texts_with_own_tokenizer(py::object self, const TextList& texts, int64_t batch_size,
                                           const std::string& prompt, std::optional<int64_t> max_length) {
    py::object tokenizer = py::getattr(self, "tokenizer", py::none());
    if (tokenizer.is_none())
        throw py::value_error("Model.encode(texts): this model has no tokenizer of its own (load it with "
                              "nce.load_model(PATH) from a model folder or a run's folder), or call "
                              "model.embed(tokenizer, texts)");
    return embed_texts(self.cast<EmbeddingModel&>(), tokenizer.cast<const data::Tokenizer&>(), texts, max_length,
                       batch_size, prompt);
}

}  // namespace

void bind_models(py::module_& module) {
    using py::arg;
    py::class_<EmbeddingModel>(module, "Model", py::dynamic_attr(),
                               "An embedding model (text_encoder, bert or sig_predictor): inputs and a mask in, unit "
                               "rows out")
        .def_property_readonly("config", [](const EmbeddingModel& m) { return json_to_python(nn::config_to_json(m.config())); })
        .def("encode", [](EmbeddingModel& m, const ArrayLike& input, const ArrayLike& mask, Generator* generator) {
                 return m.encode(input.tensor(), mask.tensor(), generator);
             }, arg("input"), arg("mask"), arg("generator") = nullptr,
             "ids [B,T] int64 (text_encoder) or features [B,T,in_dim] (sig_predictor), mask [B,T] -> Var [B,out] "
             "(unit rows). In training mode dropout draws from `generator`.")
        .def("encode", &encode_texts_with_own_tokenizer, arg("texts"), arg("batch_size") = 64,
             arg("prompt") = "none", arg("max_length") = py::none(),
             "Texts -> float32 [len(texts), D] unit rows with the model's own tokenizer (nce.load_model's), as "
             "nce encode; prompt: query|passage|none puts the model's prompt before each text")
        .def("embed", &embed_texts, arg("tokenizer"), arg("texts"), arg("max_length") = py::none(),
             arg("batch_size") = 64, arg("prompt") = "none",
             "Texts -> float32 [len(texts), D] unit rows, in eval mode and without a graph (as nce encode); "
             "prompt: query|passage|none puts the model's prompt before each text")
        .def("parameters", [](py::object self) {
                 py::list named;
                 for (auto& [name, var] : self.cast<EmbeddingModel&>().named_parameters())
                     named.append(py::make_tuple(name, py::cast(var, py::return_value_policy::reference_internal, self)));
                 return named;
             }, "[(state_dict name, Var)]: the model's own parameter Vars")
        .def("train", [](EmbeddingModel& m, bool on) { m.train(on); }, arg("on") = true)
        .def("eval", [](EmbeddingModel& m) { m.train(false); })
        .def_property_readonly("training", &EmbeddingModel::training)
        .def("zero_grad", &EmbeddingModel::zero_grad)
        .def("save", [](EmbeddingModel& m, const std::string& path) { nn::save_model(path, m); }, arg("path"))
        .def_property_readonly("log_tau", [](py::object self) -> py::object {
            Var* log_tau = self.cast<EmbeddingModel&>().log_tau();
            if (!log_tau) return py::none();
            return py::cast(log_tau, py::return_value_policy::reference_internal, self);
        })
        .def("temperature", [](EmbeddingModel& m) { return nn::temperature(m); })
        .def("clamp_temperature", &EmbeddingModel::clamp_temperature)
        .def_property_readonly("parameter_count", [](const EmbeddingModel& m) { return nn::parameter_count(m.config()); });

    module.def("make_model", [](const py::dict& config, uint64_t seed, const DtypeLike& dtype_like) {
        py::handle dtype = dtype_like.object;
        Generator generator(seed);
        return nn::make_model(config_from_python(config), generator, dtype_from_python(dtype));
    }, arg("config"), arg("seed") = 0, arg("dtype") = "float32",
       "A fresh model: config is a dict of ModelConfig fields (the rest keep their defaults)");
    module.def("load_model", &load_model_with_tokenizer, arg("path"), arg("dtype") = "float32",
               "A model checkpoint (.safetensors with nce_config), or a model folder (sentence-transformers, or a bare "
               "Hugging Face encoder: mean pooling, said in .notes); .tokenizer is its tokenizer when one is found");

    py::class_<nn::Optimizer>(module, "Optimizer")
        .def("step", &nn::Optimizer::step)
        .def("zero_grad", &nn::Optimizer::zero_grad)
        .def_property("lr", &nn::Optimizer::learning_rate, &nn::Optimizer::set_learning_rate)
        .def_property_readonly("step_count", &nn::Optimizer::step_count)
        .def_property_readonly("name", &nn::Optimizer::name);
    py::class_<nn::SGD, nn::Optimizer>(module, "SGD")
        .def(py::init([](const VarList& parameters, double lr, double momentum, double dampening, double weight_decay,
                         bool nesterov) {
                 return std::make_unique<nn::SGD>(parameter_pointers(parameters.object),
                                                  nn::SGDOptions{lr, momentum, dampening, weight_decay, nesterov});
             }),
             arg("parameters"), arg("lr"), arg("momentum") = 0.0, arg("dampening") = 0.0, arg("weight_decay") = 0.0,
             arg("nesterov") = false, py::keep_alive<1, 2>());
    py::class_<nn::Adam, nn::Optimizer>(module, "Adam")
        .def(py::init([](const VarList& parameters, double lr, std::pair<double, double> betas, double eps,
                         double weight_decay, bool amsgrad) {
                 return std::make_unique<nn::Adam>(
                     parameter_pointers(parameters.object),
                     nn::AdamOptions{lr, betas.first, betas.second, eps, weight_decay, amsgrad});
             }),
             arg("parameters"), arg("lr") = 1e-3, arg("betas") = std::pair<double, double>{0.9, 0.999},
             arg("eps") = 1e-8, arg("weight_decay") = 0.0, arg("amsgrad") = false, py::keep_alive<1, 2>());
    py::class_<nn::AdamW, nn::Adam>(module, "AdamW")
        .def(py::init([](const VarList& parameters, double lr, std::pair<double, double> betas, double eps,
                         double weight_decay, bool amsgrad) {
                 return std::make_unique<nn::AdamW>(
                     parameter_pointers(parameters.object),
                     nn::AdamWOptions{lr, betas.first, betas.second, eps, weight_decay, amsgrad});
             }),
             arg("parameters"), arg("lr") = 1e-3, arg("betas") = std::pair<double, double>{0.9, 0.999},
             arg("eps") = 1e-8, arg("weight_decay") = 0.01, arg("amsgrad") = false, py::keep_alive<1, 2>());

    module.def("clip_grad_norm", [](const VarList& parameters, double max_norm) {
        return nn::clip_grad_norm(parameter_pointers(parameters.object), max_norm);
    }, arg("parameters"), arg("max_norm"), "Clips the gradients' global L2 norm; returns the norm before clipping");
    module.def("train_step", &train_step, arg("model"), arg("optimizer"), arg("loss_fn"), arg("max_grad_norm") = 0.0,
               "One step: zero_grad, loss_fn() -> backward, clip to max_grad_norm (> 0), optimizer step, clamp "
               "the temperature. Returns the loss (float); a non-finite loss is a ValueError before any update.");
}

}  // namespace nce::python
