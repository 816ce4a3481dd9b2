// Checks a tokenizer.model's bytes before SentencePiece sees them.
//
// Debian's libsentencepiece (0.1.97) does not survive every malformed model: a piece whose
// string starts with a NUL byte (for its trie, a zero-length key) makes Darts throw from inside
// a noexcept frame of the library during SentencePieceProcessor::Load, and the process
// terminates; normalization rules whose trie points outside itself make it read far outside the
// file and crash. Debian ships no sentencepiece_model.pb.h, so the model is checked here, by a
// small reader of its protobuf wire format (fuzz/README.md, the tokenizer_model finding).
//
// The wire format: a message is a sequence of fields, each a varint tag (field number << 3 |
// wire type) and a value whose wire type says how to skip it:
//   0 varint (7 bits a byte, high bit = more; at most 10 bytes)
//   1 8 bytes          5 4 bytes
//   2 a varint length, then that many bytes (a string or a nested message)
// A model (ModelProto) is:
//   field 1, repeated: a SentencePiece message, of
//       field 1: piece, the string (length-delimited)
//       field 2: score, a float (4 bytes)
//       field 3: type, an enum (varint)
//   fields 3 and 5: normalizer and denormalizer specs (NormalizerSpec), whose field 2,
//       precompiled_charsmap, holds the normalization rules as a Darts trie (check_charsmap
//       in the .cpp says what is checked)
//   fields 2 and 4: trainer spec and self-test data (skipped here; protobuf checks them and
//       SentencePiece refuses them cleanly).
// Other fields are skipped by their wire type; groups (wire types 3 and 4, which SentencePiece
// never writes) are refused.
//
// Refused, with one nce::Error line naming the file and "pass a tokenizer.model written by
// training": a varint that runs off the end or past 64 bits, a field number 0, an unknown wire
// type, a length or fixed-size value that runs past its message (a truncated file), a piece or
// spec field with the wrong wire type, a piece whose string is missing, empty or holds a NUL
// byte, more than kMaxTokenizerPieces pieces, normalization rules whose trie points outside
// itself or its strings. What passes may still be refused by SentencePiece (duplicate pieces, no
// <unk>, an unknown model type): it reports those as a status, which Tokenizer::load turns into
// an nce::Error.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace nce::data {

// Far above any real vocabulary (SentencePiece models hold thousands to a few hundred thousand).
inline constexpr size_t kMaxTokenizerPieces = 1'000'000;

// Throws nce::Error if `bytes`, the contents of the model file `path`, is not a well-formed
// ModelProto with pieces SentencePiece can load (see above). Linear in the size of `bytes`.
void check_tokenizer_model(std::string_view bytes, const std::string& path);

}  // namespace nce::data
