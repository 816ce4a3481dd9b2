// nce code [train|eval|index|search|features|make-features]: the app of
// retrieval/code/code_app.h with the shared retrieval subcommands, and
//
// `features` trains the seed's sig_predictor on precomputed teacher features instead of text
// (retrieval/code/teacher_features.h for the folder's layout, retrieval/code/sig_predictor_training.h);
// `make-features` writes a synthetic folder of that layout to try it on.
#include <fmt/format.h>

#include <memory>

#include "retrieval/code/code_app.h"
#include "retrieval/code/pretrained_teacher.h"
#include "nn/sentence_transformers_folder.h"
#include "retrieval/code/sig_predictor_training.h"
#include "retrieval/code/teacher_features.h"
#include "apps/commands.h"
#include "retrieval/settings/gemm_precision_option.h"
#include "apps/retrieval_subcommands.h"
#include "retrieval/run/retrieval_app.h"
#include "engine/error.h"

namespace nce::apps {
namespace {

// `nce code features`: the run's flags (sizes, budget, seed, output) plus --features DIR.
void add_features_command(CLI::App& code, int& exit_code) {
    CLI::App* command = code.add_subcommand(
        "features",
        "train the sig_predictor on precomputed teacher features (.npy) and evaluate signature -> body.\n"
        "--features DIR holds, row i = function i:\n"
        "  signature_features.npy  float [N, T, in_dim]  the teacher's features of the signature's tokens\n"
        "  signature_mask.npy      int64/float [N, T]    1 = token, 0 = padding (optional: all tokens)\n"
        "  body_embeddings.npy     float [N, out_dim]    the teacher's embedding of the body (the target)\n"
        "  groups.npy              int64 [N]             file or package of each function (optional)\n"
        "nce code make-features --out DIR writes a synthetic example");
    retrieval::RunConfig defaults = code::features_defaults();
    auto options = std::make_shared<retrieval::RunConfigOptions>();
    options->add_to(*command, defaults);
    auto folder = std::make_shared<std::string>();
    command->add_option("--features", *folder, "the folder of teacher features (layout above)")->required();
    command->callback([options, folder, &exit_code] {
        retrieval::RunConfig config = options->resolve();
        retrieval::apply_gemm_precision(config.gemm_precision, Device::CPU);
        code::run_sig_predictor_training(config, *folder);
        exit_code = 0;
    });
}

// `nce code make-features --out DIR`: a synthetic teacher-features folder, or with --init
// FOLDER a pretrained model's (retrieval/code/pretrained_teacher.h) over the code corpus.
void add_make_features_command(CLI::App& code, int& exit_code) {
    CLI::App* command = code.add_subcommand(
        "make-features", "write a teacher-features folder for `nce code features`: synthetic and learnable, or with "
        "--init FOLDER a pretrained model's token states and body embeddings over the code corpus");
    auto options = std::make_shared<code::SyntheticFeatureOptions>();
    auto teacher = std::make_shared<code::PretrainedTeacherOptions>();
    auto folder = std::make_shared<std::string>();
    auto data = std::make_shared<std::string>();
    command->add_option("--out", *folder, "the folder to write (new, or empty)")->required();
    command->add_option("--init", teacher->model_folder, "a sentence-transformers model folder as the frozen teacher "
                        "(its last-layer token states of each signature, its embedding of each body)");
    command->add_option("--data", *data, "with --init: the folder of sources to mine (default: the code app's corpus)");
    command->add_option("--functions", options->functions, "rows N")->capture_default_str();
    command->add_option("--tokens", options->tokens, "signature tokens T (synthetic: each row has 4 to T; with --init "
                        "the signature's first T tokens, 32 unless given)")->capture_default_str();
    command->add_option("--in-dim", options->input_dim, "features per token")->capture_default_str();
    command->add_option("--out-dim", options->output_dim, "size of the body embeddings")->capture_default_str();
    command->add_option("--group-size", options->group_size, "functions per group (file)")->capture_default_str();
    command->add_option("--noise", options->noise, "standard deviation of the noise on each token")->capture_default_str();
    command->add_option("--seed", options->seed, "fixes every number written")->capture_default_str();
    command->callback([command, options, teacher, folder, data, &exit_code] {
        if (!teacher->model_folder.empty()) {
            for (const char* synthetic : {"--functions", "--in-dim", "--out-dim", "--group-size", "--noise", "--seed"})
                NCE_CHECK(command->count(synthetic) == 0, "make-features: {} shapes the synthetic folder; with --init "
                          "the model and the corpus decide it: drop {}", synthetic, synthetic);
            teacher->tokens = command->count("--tokens") > 0 ? options->tokens : 32;
            code::check_new_feature_folder(*folder);
            nn::sentence_transformers_config(teacher->model_folder);  // a bad folder is named before the corpus is mined
            retrieval::RunConfig config = code::code_defaults();
            config.data = *data;
            data::RetrievalDataset corpus = code::code_app().load_dataset(config);
            code::write_pretrained_teacher_features(*folder, corpus, *teacher);
            fmt::print("wrote the token states and body embeddings of {} functions by {} to {}\n",
                       corpus.queries.size(), teacher->model_folder, *folder);
            exit_code = 0;
            return;
        }
        NCE_CHECK(data->empty(), "make-features: --data is read with --init only (the synthetic folder needs no "
                  "corpus)");
        code::write_synthetic_teacher_features(*folder, *options);
        fmt::print("wrote {} synthetic functions ({} tokens of {} features -> {}-dimensional bodies) to {}\n",
                   options->functions, options->tokens, options->input_dim, options->output_dim, *folder);
        exit_code = 0;
    });
}

}  // namespace

void add_code_command(CLI::App& app, int& exit_code) {
    CLI::App* code = add_retrieval_subcommands(app, code::code_app(), exit_code);
    add_features_command(*code, exit_code);
    add_make_features_command(*code, exit_code);
}

}  // namespace nce::apps
