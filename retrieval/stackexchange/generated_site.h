// A generated StackExchange site: the default data of `nce stackexchange`, written as a
// Posts.xml in the dump's format and read back through data/stackexchange_reader.h like a
// real dump.
//
// The site is about brewing. Its vocabulary is a list of topics; each topic holds concepts,
// and each concept has several surface forms that mean the same thing:
//   topic "hops":  { hops | bines | cones }  { bitterness | bite | harshness }  ...
// A question picks one topic, three of its concepts and one detail concept from another
// topic, and writes each in one of its forms:
//   Title "Why does bite change with pellets?"   Body "<p>Could the kettle be the reason? My lupulin varies.</p>"
// Each question gets 1 to 5 answers. An answer of quality u (drawn uniformly) writes the
// question's concepts, each in another form with probability `paraphrase_probability`
// (so a good answer shares meaning, not always words, with its question), keeps 2 to 4 of
// the 4 (fewer the lower u is), and adds 1 or 2 other concepts of the same topic, which the
// question's neighbours use too. Its Score grows with u (plus noise, negatives possible); the
// best answer is the accepted one with probability `accepted_probability`. Bodies are HTML
// (paragraphs, <em>, <code>, entities), escaped into the XML attribute as in a real dump.
//
// Lexical search finds the answers that reuse the question's words; a model that learns which
// forms mean the same concept finds the paraphrased ones too. The same options (seed
// included) give the same file, byte for byte.
#pragma once
#include <cstdint>
#include <string>

namespace nce::stackexchange {

struct GeneratedSiteOptions {
    int64_t questions = 4000;
    int64_t max_answers = 5;               // answers per question: 1 .. max_answers
    double paraphrase_probability = 0.65;  // an answer writes a concept in another form
    double accepted_probability = 0.6;     // the best answer is marked accepted
    uint64_t seed = 0;
};

// The whole Posts.xml text. Throws nce::Error naming the option when one is out of range.
std::string generate_posts_xml(const GeneratedSiteOptions& options);

// Writes `<folder>/Posts.xml` (the folder is created when missing) through a temporary file
// renamed into place, and returns the file's path.
std::string write_generated_site(const std::string& folder, const GeneratedSiteOptions& options);

}  // namespace nce::stackexchange
