#include "retrieval/stackexchange/stackexchange_app.h"

#include "retrieval/stackexchange/posts_dataset.h"

namespace nce::stackexchange {
namespace {

// The defaults: sized so that `train` takes about a minute or two and `compare` (seven losses at
// compare_steps each) a few minutes on two cores. The vocabulary and the lengths are sized to
// the data a run reads (retrieval/settings/data_sizes.h): a small generated site and a real dump get
// their own; the model stays small.
retrieval::RunConfig stackexchange_defaults() {
    retrieval::RunConfig config;
    config.output = "runs/stackexchange";
    config.vocab_size = retrieval::kSizedToData;  // sized to the data, as are the two lengths (retrieval/settings/data_sizes.h)
    config.character_coverage = 1.0;  // English: every character kept
    config.d_model = 64;
    config.num_layers = 1;
    config.nhead = 4;
    config.dim_feedforward = 128;
    config.lexical_head = retrieval::LexicalHead::TermWeights;  // the term-weight head (docs/retrieval_training.md)
    config.max_query_length = retrieval::kSizedToData;
    config.max_passage_length = retrieval::kSizedToData;
    config.loss = "multi_positive";   // every answer of a question is a positive
    // Triplet's negative: another question's best answer. A lower-ranked answer of the same
    // question (hard_negative, mixed) is still one of its answers, relevant in evaluation.
    config.triplet_negatives = data::TripletNegatives::InBatch;
    config.batch_size = 32;
    config.learning_rate = 1e-2;     // a small model learns the paraphrases faster at this rate
    config.max_steps = 1200;
    config.evaluate_every = 200;
    return config;
}

}  // namespace

retrieval::RetrievalApp stackexchange_app() {
    retrieval::RetrievalApp app;
    app.name = "stackexchange";
    app.description =
        "question -> answer retrieval on a StackExchange dump (--data Posts.xml; default: a generated site)";
    app.defaults = stackexchange_defaults();
    app.bm25_variants = {eval::LexicalTokens::Whitespace};
    // Posts are prose with code, names and punctuation in it ("(IPA)", "the OG.", `mashTemp`):
    // read as words, they meet a question's words on the same pieces, as BM25's words do.
    app.identifier_words = true;
    app.chunk_overlap = 16;  // most answers fit one window; long ones share 16 tokens
    app.chunked_passages = true;  // a real dump's answers run long: the model reads them whole, in windows
    app.load_dataset = [](const retrieval::RunConfig& config) { return load_posts_dataset(config); };
    app.extra_results = [](const retrieval::RunConfig& config) {
        return nlohmann::json{{"data", config.data.empty() ? "generated" : config.data}};
    };
    return app;
}

}  // namespace nce::stackexchange
