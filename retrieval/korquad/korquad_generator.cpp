// The generated KorQuAD: towns, their aspects' paragraphs, and paraphrased questions.
#include "retrieval/korquad/korquad_generator.h"

#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "retrieval/settings/run_config.h"
#include "engine/error.h"
#include "engine/random.h"

namespace nce::korquad {
namespace {

// ---- Korean text helpers ----

// The code points of UTF-8 text (the generator writes only valid UTF-8).
std::u32string code_points(const std::string& text) {
    std::u32string points;
    for (size_t i = 0; i < text.size();) {
        unsigned char lead = static_cast<unsigned char>(text[i]);
        int length = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : 4;
        char32_t point = length == 1 ? lead : lead & (0x7F >> length);
        for (int k = 1; k < length; ++k) point = (point << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
        points.push_back(point);
        i += static_cast<size_t>(length);
    }
    return points;
}

// Whether the word's last syllable ends in a consonant (batchim): it chooses the particle,
// 은/는, 이/가, 을/를, 과/와. Digits are read as Korean numbers read them.
bool ends_in_consonant(const std::string& word) {
    std::u32string points = code_points(word);
    if (points.empty()) return false;
    char32_t last = points.back();
    if (last >= 0xAC00 && last <= 0xD7A3) return (last - 0xAC00) % 28 != 0;
    if (last >= '0' && last <= '9') return std::u32string(U"013678").find(last) != std::u32string::npos;
    return false;
}

// Fills a pattern: {S}, {V}, {X} are replaced by the town, the value and the extra detail;
// {S:은/는} adds the particle that fits (the first after a consonant, the second after a vowel).
// Returns the text and, through value_offset, the code-point offset of {V} (-1 when absent).
std::string fill(const std::string& pattern, const std::string& town, const std::string& value,
                 const std::string& extra, int64_t* value_offset) {
    std::string out;
    if (value_offset) *value_offset = -1;
    for (size_t i = 0; i < pattern.size();) {
        if (pattern[i] != '{') {
            out += pattern[i++];
            continue;
        }
        size_t close = pattern.find('}', i);
        std::string slot = pattern.substr(i + 1, close - i - 1);
        i = close + 1;
        char name = slot[0];
        const std::string& word = name == 'S' ? town : name == 'V' ? value : extra;
        if (name == 'V' && value_offset) *value_offset = static_cast<int64_t>(code_points(out).size());
        out += word;
        if (slot.size() > 2) {  // "S:은/는"
            std::string choices = slot.substr(2);
            size_t slash = choices.find('/');
            out += ends_in_consonant(word) ? choices.substr(0, slash) : choices.substr(slash + 1);
        }
    }
    return out;
}

// ---- names ----

const std::vector<std::string> kSyllables = {"한", "솔", "가", "람", "서", "린", "누", "리", "다", "온", "새", "별",
                                             "해", "든", "마", "루", "아", "름", "보", "라", "하", "늘", "나", "래",
                                             "미", "소", "구", "결", "바", "도", "초", "록", "은", "빛", "여", "울",
                                             "달", "빈", "금", "강", "청", "송", "백", "운", "진", "주", "향", "단"};
const std::vector<std::string> kSurnames = {"김", "이", "박", "최", "정", "강", "조", "윤", "장", "임", "한", "오",
                                            "서", "신", "권", "황", "안", "송", "류", "홍"};
const std::vector<std::string> kGivenSyllables = {"민", "서", "준", "현", "지", "우", "수", "영", "태", "하",
                                                  "은", "도", "연", "진", "호", "성", "재", "윤", "희", "경"};

template <typename T>
const T& pick(const std::vector<T>& items, Generator& generator) {
    return items[static_cast<size_t>(generator.next_index(static_cast<int64_t>(items.size())))];
}

std::string two_syllables(Generator& generator) { return pick(kSyllables, generator) + pick(kSyllables, generator); }
std::string person(Generator& generator) {
    return pick(kSurnames, generator) + pick(kGivenSyllables, generator) + pick(kGivenSyllables, generator);
}
std::string number_between(Generator& generator, int64_t low, int64_t high) {
    return std::to_string(low + generator.next_index(high - low + 1));
}

// ---- the facts ----

enum class Aspect { History, Geography, Economy, Culture, Society };

// One kind of fact: how a paragraph states it and how questions ask for it.
struct Relation {
    Aspect aspect;
    std::string (*value)(Generator&);   // the answer
    std::string (*extra)(Generator&);   // a detail the sentence also mentions (may be null)
    std::vector<std::string> statements;  // paragraph patterns
    std::vector<std::string> questions;   // question patterns (paraphrases)
};

std::string year(Generator& g) { return number_between(g, 1780, 1990); }
std::string month(Generator& g) { return number_between(g, 1, 12); }
std::string day(Generator& g) { return number_between(g, 1, 28); }
std::string century(Generator& g) { return number_between(g, 11, 18); }
std::string height(Generator& g) { return number_between(g, 600, 1900); }
std::string person_name(Generator& g) { return person(g); }
std::string old_name(Generator& g) {
    static const std::vector<std::string> endings = {"골", "벌", "내", "고을", "나루"};
    return two_syllables(g) + pick(endings, g);
}
std::string disaster(Generator& g) {
    static const std::vector<std::string> endings = {"대홍수", "대지진", "대화재", "전쟁", "난리"};
    return two_syllables(g) + pick(endings, g);
}
std::string river(Generator& g) { return two_syllables(g) + "강"; }
std::string mountain(Generator& g) { return two_syllables(g) + "산"; }
std::string area(Generator& g) { return number_between(g, 40, 980); }
std::string neighbour(Generator& g) {
    static const std::vector<std::string> endings = {"군", "읍", "면"};
    return two_syllables(g) + pick(endings, g);
}
std::string industry(Generator& g) {
    static const std::vector<std::string> kinds = {"어업", "농업", "양잠업", "제철업", "도자기 생산", "관광업",
                                                   "목재 가공", "소금 생산", "직물 산업", "조선업", "광업", "인삼 재배"};
    return pick(kinds, g);
}
std::string company(Generator& g) {
    static const std::vector<std::string> endings = {"산업", "전자", "제약", "물산", "중공업", "식품"};
    return two_syllables(g) + pick(endings, g);
}
std::string product(Generator& g) {
    static const std::vector<std::string> kinds = {"배", "사과", "곶감", "한지", "녹차", "대추", "인삼", "굴비", "미역",
                                                   "옹기", "죽세공품", "밤", "포도", "고추", "마늘", "버섯"};
    return pick(kinds, g);
}
std::string square(Generator& g) { return two_syllables(g) + "광장"; }
std::string festival(Generator& g) {
    static const std::vector<std::string> endings = {"축제", "문화제", "한마당", "예술제"};
    return two_syllables(g) + pick(endings, g);
}
std::string temple(Generator& g) { return two_syllables(g) + "사"; }
std::string painting(Generator& g) {
    static const std::vector<std::string> endings = {"풍경도", "산수도", "화조도", "설경도"};
    return two_syllables(g) + pick(endings, g);
}
std::string food(Generator& g) {
    static const std::vector<std::string> endings = {"국수", "떡", "비빔밥", "전", "국밥", "묵"};
    return two_syllables(g) + pick(endings, g);
}
std::string university(Generator& g) { return two_syllables(g) + "대학교"; }
std::string station(Generator& g) { return two_syllables(g) + "역"; }
std::string population(Generator& g) { return number_between(g, 12, 980) + "000"; }

const std::vector<Relation>& relations() {
    static const std::vector<Relation> all = {
        // history
        {Aspect::History, year, nullptr,
         {"{S:은/는} {V}년에 처음 세워졌다.", "{S:이/가} 처음 생긴 것은 {V}년의 일이다."},
         {"{S:이/가} 만들어진 해는 언제인가?", "{S:은/는} 몇 년에 건립되었나?", "{S}의 출발은 어느 해인가?"}},
        {Aspect::History, person_name, year,
         {"{X}년 {V:이/가} 마을의 기틀을 마련하였다.", "{V:은/는} {X}년 무렵 마을의 기틀을 다졌다."},
         {"{S}의 기초를 닦은 사람은 누구인가?", "{S}의 토대를 놓은 인물은 누구인가?", "{S:을/를} 일군 사람의 이름은?", "{X}년에 {S}의 토대를 놓은 인물은?"}},
        {Aspect::History, old_name, nullptr,
         {"옛날에는 이 지역을 {V:이라고/라고} 불렀다.", "이 지역의 옛 이름은 {V:이다/다}."},
         {"{S}의 과거 명칭은 무엇인가?", "{S:을/를} 예전에는 무엇이라 했나?", "{S}의 본래 지명은?"}},
        {Aspect::History, disaster, year,
         {"{X}년에 일어난 {V:으로/로} 도시의 절반이 파괴되었다.", "{X}년의 {V} 때 마을 대부분이 무너졌다."},
         {"{S:을/를} 크게 망가뜨린 사건은 무엇인가?", "{S:이/가} 피해를 입은 재난의 이름은?", "{S}의 반이 사라진 계기는?", "{X}년 {S:을/를} 덮친 재난은 무엇인가?"}},
        // geography
        {Aspect::Geography, river, nullptr,
         {"{S}의 중심에는 {V:이/가} 흐른다.", "도심 한가운데로 {V:이/가} 흘러간다."},
         {"{S} 한가운데를 지나는 물줄기는?", "{S:을/를} 관통하는 하천의 이름은?", "{S} 중앙을 흐르는 강은 무엇인가?"}},
        {Aspect::Geography, mountain, height,
         {"북쪽에는 해발 {X}미터의 {V:이/가} 솟아 있다.", "{V:은/는} 높이 {X}미터로 북쪽을 가로막고 있다."},
         {"{S} 북부에 있는 높은 봉우리는?", "{S} 위쪽에 자리한 산의 이름은?", "{S}의 북녘을 감싼 고봉은 무엇인가?", "높이가 {X}미터인 {S}의 산은?"}},
        {Aspect::Geography, area, nullptr,
         {"면적은 약 {V}제곱킬로미터이다.", "전체 넓이가 {V}제곱킬로미터에 이른다."},
         {"{S}의 크기는 얼마나 되나?", "{S}의 땅은 몇 제곱킬로미터인가?", "{S}의 영역은 얼마만큼 넓은가?"}},
        {Aspect::Geography, neighbour, nullptr,
         {"동쪽으로는 {V:과/와} 맞닿아 있다.", "동쪽 경계 너머에는 {V:이/가} 있다."},
         {"{S}의 동편에 인접한 지역은?", "{S} 해 뜨는 방향의 이웃 고장은?", "{S:과/와} 동쪽으로 붙은 곳은 어디인가?"}},
        // economy
        {Aspect::Economy, industry, nullptr,
         {"주민들은 주로 {V}에 종사한다.", "이곳 사람들 대부분은 {V:으로/로} 생계를 꾸린다."},
         {"{S} 사람들의 주된 생업은 무엇인가?", "{S} 주민 다수가 하는 일은?", "{S}의 중심 산업은 무엇인가?"}},
        {Aspect::Economy, company, year,
         {"{X}년 설립된 {V:은/는} 이 지역에서 가장 큰 기업이다.", "가장 규모가 큰 회사는 {X}년에 창업한 {V:이다/다}."},
         {"{S}에서 제일 큰 회사는 어디인가?", "{S} 최대의 업체는 어디인가?", "{S:을/를} 대표하는 대기업은?", "{X}년에 창립된 {S}의 회사는?"}},
        {Aspect::Economy, product, nullptr,
         {"특산물로는 {V:이/가} 유명하다.", "이 고장에서 나는 {V:은/는} 전국에 이름이 높다."},
         {"{S}의 이름난 토산품은 무엇인가?", "{S:을/를} 대표하는 지역 산물은?", "{S}에서 나는 명물은?"}},
        {Aspect::Economy, square, day,
         {"매달 {X}일에는 {V}에서 큰 장이 열린다.", "{V}에서는 달마다 {X}일에 장터가 선다."},
         {"{S}의 정기 시장이 서는 장소는?", "{S}에서 장날에 사람들이 모이는 곳은?", "{S} 장터의 위치는 어디인가?", "매달 {X}일 {S}에서 장이 서는 곳은?"}},
        // culture
        {Aspect::Culture, festival, month,
         {"해마다 {X}월에는 {V:이/가} 개최된다.", "{V:은/는} 매년 {X}월에 열리는 행사이다."},
         {"{S}에서 매년 벌어지는 잔치는?", "{S}의 연례 행사 이름은?", "{S}의 해마다 하는 축제는 무엇인가?", "{X}월마다 {S}에서 벌어지는 잔치는?"}},
        {Aspect::Culture, temple, century,
         {"오래된 사찰인 {V:은/는} {X}세기에 지어졌다.", "{X}세기에 창건된 {V:이/가} 산자락에 남아 있다."},
         {"{S}에 있는 옛 절의 이름은?", "{S}의 고찰은 무엇인가?", "{S}에 전해지는 불교 사원은?", "{X}세기에 세운 {S}의 절은?"}},
        {Aspect::Culture, person_name, painting,
         {"이곳 출신의 화가 {V:은/는} {X:을/를} 그린 것으로 알려져 있다.", "{X:을/를} 남긴 화가 {V:은/는} 이곳에서 태어났다."},
         {"{S}에서 태어난 미술가는 누구인가?", "{S} 태생의 그림 작가는?", "{S:이/가} 낳은 예술가는 누구인가?", "{X:을/를} 그린 {S} 출신 화가는?"}},
        {Aspect::Culture, food, nullptr,
         {"{V:은/는} 이 지역의 전통 음식이다.", "잔칫날이면 {V:을/를} 만들어 먹는 풍습이 있다."},
         {"{S}의 향토 요리는 무엇인가?", "{S}에서 예로부터 먹어 온 음식은?", "{S}의 고유한 먹거리는?"}},
        // society: education, transport, government, people
        {Aspect::Society, university, year,
         {"{X}년에 문을 연 {V:은/는} 학생 수가 가장 많은 대학교이다.", "가장 큰 대학은 {X}년 개교한 {V:이다/다}."},
         {"{S}에서 재학생이 제일 많은 학교는?", "{S} 최대 규모의 대학은 어디인가?", "{S}의 대표적인 고등 교육 기관은?", "{X}년 설립된 {S}의 대학은?"}},
        {Aspect::Society, station, year,
         {"{V:은/는} {X}년에 개통되었다.", "철도가 놓인 뒤 {X}년부터 {V:이/가} 운영되고 있다."},
         {"{S}의 기차역 이름은 무엇인가?", "{S}에서 열차를 타는 곳은?", "{S}의 철도 정거장은 어디인가?", "{X}년부터 운행한 {S}의 역은?"}},
        {Aspect::Society, person_name, nullptr,
         {"현재 시장은 {V:이다/다}.", "지금 이 도시를 이끄는 시장은 {V:이다/다}."},
         {"{S}의 현 단체장은 누구인가?", "{S:을/를} 이끄는 현 시장은?", "{S} 행정의 책임자는 누구인가?"}},
        {Aspect::Society, population, nullptr,
         {"인구는 약 {V}명이다.", "이곳에는 {V}명 정도가 살고 있다."},
         {"{S}에 사는 사람의 수는?", "{S}의 주민은 몇 명인가?", "{S}의 인구 규모는 어느 정도인가?"}},
    };
    return all;
}

// The sentence that opens a paragraph of each aspect: it names the town (with one particle
// or another) and the aspect, in words no question uses.
const std::vector<std::string>& openings(Aspect aspect) {
    static const std::vector<std::vector<std::string>> sentences = {
        {"{S}의 역사는 매우 오래되었다.", "{S:은/는} 긴 역사를 지닌 고장이다.", "{S:이/가} 걸어온 길은 순탄하지 않았다."},
        {"{S:은/는} 산과 강으로 둘러싸인 곳이다.", "{S}의 지형은 복잡한 편이다.", "{S:이/가} 자리한 땅은 기름지다."},
        {"{S}의 경제는 꾸준히 성장해 왔다.", "{S:은/는} 상업이 발달한 곳이다.", "{S:이/가} 가진 경제력은 상당하다."},
        {"{S}에는 독특한 문화가 전해진다.", "{S:은/는} 예술의 고장으로 불린다.", "{S:이/가} 지켜 온 전통은 다양하다."},
        {"{S}의 교육과 교통 시설은 잘 갖추어져 있다.", "{S:은/는} 행정의 중심지 역할을 한다.",
         "{S:이/가} 갖춘 공공 시설은 많다."}};
    return sentences[static_cast<size_t>(aspect)];
}

// Sentences any paragraph may carry: vocabulary that answers no question.
const std::vector<std::string>& filler() {
    static const std::vector<std::string> sentences = {
        "많은 관광객이 해마다 이곳을 찾는다.", "지역 주민들은 이곳에 대한 자부심이 크다.",
        "최근에는 새로운 변화가 나타나고 있다.", "이와 관련된 기록은 지역 박물관에 보관되어 있다.",
        "{S}의 모습은 시대에 따라 크게 달라졌다.", "여러 연구자들이 이 주제를 조사하였다.",
        "이곳의 풍경은 사계절 내내 아름답다.", "오래전부터 전해 내려오는 이야기도 많다.",
        "{S:은/는} 주변 지역과 활발히 교류해 왔다.", "자세한 내용은 시청 누리집에서 확인할 수 있다.",
        "젊은 세대 사이에서도 관심이 높아지고 있다.", "이러한 특징은 다른 도시와 구별되는 점이다."};
    return sentences;
}

struct Fact {
    const Relation* relation;
    std::string value;
    std::string extra;
};

// A town's name, unique within the file.
std::string town_name(Generator& generator, std::set<std::string>& used) {
    static const std::vector<std::string> endings = {"시", "군", "읍"};
    for (;;) {
        std::string name = two_syllables(generator) + pick(endings, generator);
        if (used.insert(name).second) return name;
    }
}

}  // namespace

std::string generate_korquad_json(const KorquadGeneratorOptions& options) {
    NCE_CHECK(options.articles >= 3, "korquad generator: at least 3 articles are needed (train, validation, test), got {}",
              options.articles);
    Generator generator(options.seed);
    std::set<std::string> towns;
    nlohmann::json articles = nlohmann::json::array();
    int64_t question_number = 0;
    const std::vector<Aspect> aspects = {Aspect::History, Aspect::Geography, Aspect::Economy, Aspect::Culture,
                                         Aspect::Society};
    for (int64_t a = 0; a < options.articles; ++a) {
        std::string town = town_name(generator, towns);
        nlohmann::json paragraphs = nlohmann::json::array();
        for (Aspect aspect : aspects) {
            // This aspect's facts, in a random order; a paragraph states 3 of the 4, or all 4.
            std::vector<Fact> facts;
            for (const Relation& relation : relations())
                if (relation.aspect == aspect)
                    facts.push_back({&relation, relation.value(generator),
                                     relation.extra ? relation.extra(generator) : std::string()});
            for (size_t i = facts.size(); i > 1; --i)
                std::swap(facts[i - 1], facts[static_cast<size_t>(generator.next_index(static_cast<int64_t>(i)))]);
            if (generator.next_uniform() < 0.6) facts.pop_back();
            bool long_paragraph = generator.next_uniform() < 0.15;
            int64_t fillers = long_paragraph ? 8 + generator.next_index(5) : 1 + generator.next_index(2);

            // Sentences: the facts, with filler sentences placed among them.
            std::vector<std::pair<const Fact*, std::string>> sentences;  // fact (null for filler), pattern
            for (const Fact& fact : facts) sentences.push_back({&fact, pick(fact.relation->statements, generator)});
            for (int64_t f = 0; f < fillers; ++f) {
                size_t at = static_cast<size_t>(generator.next_index(static_cast<int64_t>(sentences.size()) + 1));
                sentences.insert(sentences.begin() + static_cast<std::ptrdiff_t>(at), {nullptr, pick(filler(), generator)});
            }
            sentences.insert(sentences.begin(), {nullptr, pick(openings(aspect), generator)});
            std::string context;
            int64_t context_points = 0;
            nlohmann::json qas = nlohmann::json::array();
            for (const auto& [fact, pattern] : sentences) {
                if (!context.empty()) {
                    context += " ";
                    ++context_points;
                }
                int64_t value_offset = -1;
                std::string sentence = fact ? fill(pattern, town, fact->value, fact->extra, &value_offset)
                                            : fill(pattern, town, "", "", nullptr);
                if (fact) {
                    std::string question =
                        fill(pick(fact->relation->questions, generator), town, "", fact->extra, nullptr);
                    qas.push_back({{"id", "gen-" + std::to_string(++question_number)},
                                   {"question", question},
                                   {"answers", {{{"text", fact->value}, {"answer_start", context_points + value_offset}}}}});
                }
                context += sentence;
                context_points += static_cast<int64_t>(code_points(sentence).size());
            }
            paragraphs.push_back({{"context", context}, {"qas", qas}});
        }
        articles.push_back({{"title", town}, {"paragraphs", paragraphs}});
    }
    return nlohmann::json{{"version", "nce_generated_korquad_1.0"}, {"data", articles}}.dump();
}

int64_t write_generated_korquad(const std::string& path, const KorquadGeneratorOptions& options) {
    std::string text = generate_korquad_json(options);
    retrieval::write_text_file_atomically(path, text);
    int64_t questions = 0;
    for (size_t at = text.find("\"question\""); at != std::string::npos; at = text.find("\"question\"", at + 1)) ++questions;
    return questions;
}

}  // namespace nce::korquad
