// A bound on what a tokenizer reads. A text is kept only up to max_length tokens, but a
// tokenizer's work grows with the whole text (SentencePiece's with its square on text it does
// not know): a 2 MB passage would cost seconds to keep 128 tokens. The prefix below holds
// every one of those tokens, so reading it instead of the text changes no kept id.
//
// Why it holds them: no token of the tokenizers here covers more than kMostBytesPerToken bytes
// of text other than whitespace (nce's SentencePiece pieces are at most 16 characters, 64
// bytes; a WordPiece word longer than 100 characters is one [UNK] whichever prefix of it is
// read), and whitespace runs, which both drop or split on, are counted once. A prefix with
// (max_tokens + 2) * kMostBytesPerToken such bytes therefore holds at least max_tokens + 1
// tokens when the text has more than max_tokens: truncation and its counting see the same.
#pragma once
#include <cstdint>
#include <string_view>

namespace nce::data {

inline constexpr int64_t kMostBytesPerToken = 256;

// The longest prefix of `text` with at most (max_tokens + 2) * kMostBytesPerToken bytes, runs
// of ASCII whitespace counted as one, ending on a UTF-8 character boundary; the text itself
// when it is shorter.
std::string_view prefix_for_tokens(std::string_view text, int64_t max_tokens);

}  // namespace nce::data
