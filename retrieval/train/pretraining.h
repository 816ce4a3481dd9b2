// Corpus pretraining: before it sees a single (query, passage) pair, the model learns to
// rank the corpus's own windows the way BM25 does (after SPAR, Chen et al. 2021, "Salient
// Phrase Aware Dense Retrieval: Can a Dense Retriever Imitate a Sparse One?").
//
// No pretrained weights can be had here, so the model's first knowledge - which words
// matter and that a query's words should find the passage holding them - comes from the
// corpus itself, with BM25 as the teacher:
//
//   corpus     every passage of the data set (the texts the app searches; no query and no
//              relevance label is read), cut into the model's windows (chunk_passages)
//   pseudo-    for each row of a step, a window drawn without replacement (reshuffled each
//   queries    pass, seeded), one of its sentences (split after . ? ! or a line break;
//              one of at least 3 words where there is one), a span of 4-12 consecutive words
//              of it, each word then dropped with probability 0.2 (at least 3 kept):
//              a short query that shares some, not all, of its words with its source
//   teacher    BM25 over the windows (the app's last lexical variant: the one the app
//              expects to be strongest), its top-K windows for the pseudo-query, their
//              scores divided by the top score (so a teacher is scale-free: 1 for the top,
//              0.9 for a window BM25 scores 90% as high)
//   loss       distill_kl(q, c [N, K, d], teacher [N, K], tau, teacher_tau = 0.1)
//                + infonce(q, c_top [N, d], tau)
//              the first matches the model's softmax over the K candidates to the teacher's
//              (how BM25 orders its own top); the second contrasts the top window with the
//              other rows' top windows (that the top beats unrelated windows at all)
//   prompts    the model reads each pseudo-query after its query prompt and each window
//              after its passage prompt (text_model.h), as it will read queries and
//              passages later; BM25 reads them bare, and a window leaves room for the prompt
//
// Steps: config.pretrain_steps, or when it is -1, sized to the corpus: six passes over its
// windows (6 x windows / pretrain_batch_size steps), at least 50 and at most 1,000 steps: at
// most about 7 minutes on 2 cores for any corpus (0.3-0.4 s a step on 128-token windows,
// embedded in groups of similar length: run_device.h; code's 1,000 steps took 293-343 s,
// KorQuAD's 750 took 299 s). (On the beer dump, with the learned part weight, the pretrained
// model's MRR@10 was .556 after 348 steps, .596 after 1,000 and .610 after 2,000; on code,
// the trained model's Rank@1 was .317 after 1,000 steps and .321 after 1,872: most of the
// gain is in by 1,000.)
// Optimiser, schedule and clipping are the run's (learning_rate, cosine, 10% warmup).
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "eval/rankings.h"
#include "retrieval/settings/run_config.h"
#include "data/dataset.h"
#include "data/tokenizer.h"
#include "engine/random.h"
#include "nn/model.h"

namespace nce::retrieval {

// A pseudo-query drawn from `window_text` as described above; empty when the text has no word.
std::string draw_pseudo_query(const std::string& window_text, Generator& generator);

inline constexpr int64_t kPretrainingPasses = 6;
inline constexpr int64_t kMostPretrainingSteps = 1000;

// The step count the run will use: config.pretrain_steps, or for -1 the corpus-sized count,
// at most `most_steps` (a run given --max-steps N pretrains no more than N steps either).
int64_t pretraining_steps(const RunConfig& config, int64_t windows,
                          int64_t most_steps = std::numeric_limits<int64_t>::max());

struct PretrainingReport {
    int64_t passages = 0;  // corpus passages read
    int64_t windows = 0;   // their windows, the pseudo-queries' sources and the candidates
    int64_t steps = 0;
    double last_loss = 0;
    double seconds = 0;
    // The share of a sample of pseudo-queries whose source window is BM25's top one (the
    // teacher's own accuracy, a sanity figure) and the trained model's (dense, over all windows).
    double teacher_top1 = 0;
    double model_top1 = 0;
};

// Pretrains `model` in place on the corpus `passages` (see above), writing the step log to
// `log_path` (JSON lines; empty: none), for pretraining_steps(config, windows, most_steps)
// steps; `progress_phase` names the phase on the progress lines (nn/progress.h), and
// `following_steps` is the work after it in pretraining steps (their run ETA; 0: none). Throws
// nce::Error when the corpus is too small to draw from: fewer windows than
// pretrain_candidates, or no window with 3 words.
PretrainingReport pretrain_text_encoder(nn::EmbeddingModel& model, const data::Tokenizer& tokenizer,
                                        const std::vector<data::Passage>& passages, eval::LexicalTokens teacher_tokens,
                                        int64_t overlap, const RunConfig& config, const std::string& log_path,
                                        int64_t most_steps = std::numeric_limits<int64_t>::max(),
                                        const std::string& progress_phase = "", double following_steps = 0);

}  // namespace nce::retrieval
