#include "data/added_tokens.h"

namespace nce::data {

std::vector<TextSegment> split_at_added_tokens(const AlignedText& text, const std::vector<AddedToken>& tokens) {
    std::vector<TextSegment> segments;
    if (tokens.empty()) {
        if (text.size() > 0) segments.push_back({text, -1});
        return segments;
    }
    const std::u32string& chars = text.chars;
    size_t taken = 0;  // text before this is already in a segment
    size_t i = 0;
    while (i < chars.size()) {
        const AddedToken* longest = nullptr;
        for (const AddedToken& token : tokens)
            if (!token.content.empty() && chars.compare(i, token.content.size(), token.content) == 0 &&
                (longest == nullptr || token.content.size() > longest->content.size()))
                longest = &token;
        if (longest == nullptr) {
            ++i;
            continue;
        }
        size_t start = i, stop = i + longest->content.size();
        if (longest->lstrip)
            while (start > taken && is_white_space(chars[start - 1])) --start;
        if (longest->rstrip)
            while (stop < chars.size() && is_white_space(chars[stop])) ++stop;
        if (start > taken) segments.push_back({text.slice(taken, start), -1});
        segments.push_back({text.slice(start, stop), longest->id});
        taken = i = stop;
    }
    if (taken < chars.size()) segments.push_back({text.slice(taken, chars.size()), -1});
    return segments;
}

}  // namespace nce::data
