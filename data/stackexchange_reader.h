// A StackExchange data dump's Posts.xml as a retrieval data set: each question is a query,
// its answers are the relevant passages, ranked by their votes.
//
//   <posts>
//     <row Id="1" PostTypeId="1" Score="18" Title="..." Body="&lt;p&gt;...&lt;/p&gt;" AcceptedAnswerId="4" ... />
//     <row Id="4" PostTypeId="2" ParentId="1" Score="12" Body="..." ... />
//   </posts>
//
// The file is streamed one line (one <row/>) at a time, so a dump of any size reads in
// constant memory besides the data set itself. Attribute values are XML-unescaped; a Body is
// then HTML, cleaned to plain text (data/text_cleaning.h).
//
// query   = Title + "\n" + cleaned Body of a question (PostTypeId 1)  id and group: its Id
// passage = cleaned Body of an answer (PostTypeId 2)                  id: its Id, group: ParentId
// relevance: question -> each of its answers; score = the answer's Score; rank = position
//            by Score, highest first, ties broken by the accepted answer first, then by Id;
//            accepted = the question's AcceptedAnswerId names it.
// Other post types (tag wikis, ...) are counted as skipped "other post type". An answer whose
// question is not in the file, a row that cannot be parsed, or a file cut short before
// </posts> is skipped (lenient) or stops the read (strict) naming the file and line.
// ReadReport::records: "questions", "answers".
#pragma once
#include <string>

#include "data/dataset.h"

namespace nce::data {

RetrievalDataset read_stackexchange_posts(const std::string& path, Leniency leniency);

}  // namespace nce::data
