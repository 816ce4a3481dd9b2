// Prompts. A model reads every query as model.config().query_prompt + query and every
// passage as passage_prompt + passage, in training, evaluation, index and search alike; the
// prompt goes in before tokenization, so its tokens count towards the maximum lengths.
#pragma once
#include <string>
#include <vector>

namespace nce::retrieval {

//   with_prompt("query: ", {"who", "why"}) -> {"query: who", "query: why"}
// An empty prompt gives the texts as they are.
inline std::vector<std::string> with_prompt(const std::string& prompt, std::vector<std::string> texts) {
    if (!prompt.empty())
        for (std::string& text : texts) text.insert(0, prompt);
    return texts;
}

}  // namespace nce::retrieval
