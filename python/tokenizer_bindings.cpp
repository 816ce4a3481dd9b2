// nce.Tokenizer (data/tokenizer.h): SentencePiece trained on your texts, or loaded; or a
// pretrained model's tokenizer from its folder (BERT's WordPiece, XLM-RoBERTa's Unigram).
//
//   tok = nce.Tokenizer.train(texts, "out/", vocab_size=500)    # writes out/tokenizer.model
//   ids, mask = tok.encode(["hello world", "hi"], max_length=32)  # int64 [B, T] each
//   nce.Tokenizer("models/all-MiniLM-L6-v2").kind                 # "wordpiece"
#include <optional>
#include <string>
#include <vector>

#include "data/tokenizer.h"
#include "python/bindings.h"
#include "python/numpy_conversion.h"

namespace nce::python {

void bind_tokenizer(py::module_& module) {
    using data::Tokenizer;
    using py::arg;
    py::class_<Tokenizer>(module, "Tokenizer", "SentencePiece tokenizer: texts -> int64 ids and mask [B, T]")
        .def(py::init([](const std::string& path) { return Tokenizer::load(path); }), arg("path"),
             "Loads a tokenizer.model (or a folder holding one), or a Hugging Face model folder's tokenizer "
             "(tokenizer.json, vocab.txt or sentencepiece.bpe.model)")
        .def_static("load", &Tokenizer::load, arg("path"))
        .def_static("train", [](const std::vector<std::string>& texts, const std::string& directory, int64_t vocab_size,
                                const std::string& model_type, double character_coverage, std::optional<uint32_t> seed,
                                bool exact_vocab_size, bool identifier_words) {
                        data::TokenizerOptions options;
                        options.vocab_size = vocab_size;
                        options.model_type = data::parse_tokenizer_model_type(model_type);
                        options.character_coverage = character_coverage;
                        options.seed = seed;
                        options.exact_vocab_size = exact_vocab_size;
                        options.identifier_words = identifier_words;
                        return Tokenizer::train(texts, options, directory);
                    },
                    arg("texts"), arg("directory"), arg("vocab_size") = 8000, arg("model_type") = "unigram",
                    arg("character_coverage") = 0.9995, arg("seed") = py::none(), arg("exact_vocab_size") = true,
                    arg("identifier_words") = false,
                    "Trains on texts and saves <directory>/tokenizer.model; exact_vocab_size=False makes vocab_size an "
                    "upper bound (unigram); identifier_words=True reads names and words apart from "
                    "case and punctuation (getLineNumber(x) -> get line number ( x )), kept in the model file")
        .def("encode", [](const Tokenizer& t, const std::vector<std::string>& texts, int64_t max_length) {
                 data::EncodedBatch batch = t.encode(texts, max_length);
                 return py::make_tuple(tensor_to_numpy(batch.ids), tensor_to_numpy(batch.mask));
             }, arg("texts"), arg("max_length"), "(ids, mask): int64 [B, T], right-padded, cut at max_length")
        .def("encode_ids", &Tokenizer::encode_ids, arg("text"))
        .def("decode", &Tokenizer::decode, arg("ids"))
        .def("encode_with_offsets", [](const Tokenizer& t, const std::string& text) {
                 Tokenizer::PiecesWithOffsets pieces = t.encode_with_offsets(text);
                 return py::dict(py::arg("ids") = pieces.ids, py::arg("begin") = pieces.begin, py::arg("end") = pieces.end);
             }, arg("text"))
        .def_property_readonly("kind", [](const Tokenizer& t) { return std::string(data::tokenizer_kind_name(t.kind())); },
                               "sentencepiece (trained by nce), wordpiece, unigram or xlm-roberta-sentencepiece")
        .def_property_readonly("vocab_size", &Tokenizer::vocab_size)
        .def_property_readonly("pad_id", &Tokenizer::pad_id)
        .def_property_readonly("unknown_id", &Tokenizer::unknown_id)
        .def_property_readonly("model_path", &Tokenizer::model_path)
        .def_property_readonly("reads_identifier_words", &Tokenizer::reads_identifier_words);
}

}  // namespace nce::python
