// A generated KorQuAD: Korean articles about fictional towns, in KorQuAD 1.0's JSON format,
// so the app runs on a fresh machine and reads its default data through the same reader as
// the real file (data/korquad_reader.h).
//
// Each article is one town (the title, e.g. "한솔시") with one paragraph per aspect
// (history, geography, economy, culture, education and transport). A paragraph opens with
// a sentence naming the town and states facts about it in fixed sentence patterns, among
// filler sentences, e.g. the history paragraph:
//
//   "한솔시의 역사는 매우 오래되었다. 한솔시는 1923년에 처음 세워졌다. 1931년 김민준이
//    마을의 기틀을 마련하였다. ..."
//
// and each fact gives one question whose answer is the fact's value, asked in other words
// than the paragraph uses (a paraphrase: 세워졌다 -> 만들어진, 기틀을 마련하였다 -> 기초를
// 닦은), with the town's name often carrying a different particle, and sometimes a detail
// of the sentence (a year) that the paragraph has word for word:
//
//   "한솔시가 만들어진 해는 언제인가?"          answer "1923"
//   "한솔시의 기초를 닦은 사람은 누구인가?"     answer "김민준"
//   "1931년에 한솔시의 토대를 놓은 인물은?"     answer "김민준"
//
// Why it is learnable but not trivial: every paragraph of an article shares the town's name,
// and paragraphs of one aspect share their sentence patterns across articles, so the words a
// question shares with its paragraph are mostly the town's name (written with another
// particle: whitespace tokens miss it, character bigrams find it) and a few common nouns.
// Telling the right aspect from the article's other paragraphs needs the synonym mapping
// (question wording -> paragraph wording), which a model learns from the training articles
// because the patterns repeat across towns. Filler sentences shared by all aspects add
// vocabulary that matches no question in particular. Some paragraphs carry extra facts and
// run long, past the model's maximum length.
//
// Everything is drawn from nce::Generator(seed): the same seed gives the same file.
#pragma once
#include <cstdint>
#include <string>

namespace nce::korquad {

struct KorquadGeneratorOptions {
    int64_t articles = 300;  // towns; each gives 5 paragraphs and about 3 questions per paragraph
    uint64_t seed = 13;
};

// The data set as KorQuAD 1.0 JSON text (UTF-8, answer_start in code points).
std::string generate_korquad_json(const KorquadGeneratorOptions& options);

// Writes generate_korquad_json to `path` atomically; returns the number of questions.
int64_t write_generated_korquad(const std::string& path, const KorquadGeneratorOptions& options);

}  // namespace nce::korquad
