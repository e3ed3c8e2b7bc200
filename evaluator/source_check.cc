// The source check: a small lexer over a candidate's text (after line splicing, with comments
// removed, string contents kept apart from code) that enforces what a candidate may contain.
//
// Why a scan at all, when the compile worker runs sandboxed: NVRTC opens whatever path an
// #include names, and echoes the offending line of a file it cannot parse into its log, which
// goes back to the agent. `#include "/etc/passwd"`, `<../../x>`, a computed `#include P`, the
// digraph `%:include` and a spliced `#inc\<newline>lude` all did so in our tests. The scan stops
// them before NVRTC runs; the sandbox's filesystem view is the second layer.
//
// What the scan does not try to be: a preprocessor. Host code needs no scan to be harmless
// (NVRTC compiles with -default-device, so unannotated functions are device functions, a
// __host__ function is a compile error in JIT mode, there is no -rdc so no device-side launch
// links, and the runner only ever launches the plan's kernels); the host-code rules are here so
// that the message says what is allowed.
#include "evaluator/source_check.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <filesystem>

namespace ws {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kIncludeRule =
    "#include may only name a CUDA header or a header of warpsmith's device library (ws/...), by "
    "a literal relative path without '..', found in the allowed include directories (the CUDA "
    "toolkit's include directory, its cccl subdirectory, and kernels/include)";
constexpr std::string_view kNoFilesRule =
    "a candidate may not read files: #embed, #include_next, #import, __has_include, __has_embed "
    "and .incbin are not allowed";

// Device-runtime calls that need -rdc and libcudadevrt (which warpsmith never links) or are host
// API: a call to one is rejected with the rule rather than an "undefined identifier".
constexpr std::array<std::string_view, 19> kHostApiPrefixes = {
    "cudaMalloc",     "cudaFree",         "cudaMemcpy",         "cudaMemset",   "cudaLaunch",
    "cudaDeviceSynchronize", "cudaDeviceReset", "cudaStream",   "cudaEvent",    "cudaGraph",
    "cudaGetParameterBuffer", "cudaSetDevice", "cudaGetDevice", "cudaFunc",     "cudaOccupancy",
    "cudaHost",       "cudaThread",       "cudaCtx",            "cudaDeviceSet"};

// Directives a candidate may use. Anything else (#line, #include_next, #import, #embed, #ident,
// GNU linemarkers "# 12 \"file\"") is rejected.
constexpr std::array<std::string_view, 14> kPlainDirectives = {
    "define", "undef",  "if",    "ifdef", "ifndef",  "elif",   "elifdef",
    "elifndef", "else", "endif", "error", "warning", "pragma", ""};

struct Token {
  enum class Kind { kIdent, kNumber, kString, kPunct, kEndOfDirective };
  Kind kind;
  std::string text;  // identifier, punctuator, or a string/char literal's contents
  int line;
};

bool IsIdentStart(unsigned char c) { return std::isalpha(c) || c == '_' || c >= 0x80; }
bool IsIdentChar(unsigned char c) { return std::isalnum(c) || c == '_' || c >= 0x80; }

// Offset of the first byte that is not part of valid UTF-8, or npos.
size_t FirstInvalidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    int len;
    uint32_t cp;
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return i;
    }
    if (i + len > s.size()) return i;
    for (int k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (cc & 0x3F);
    }
    const uint32_t min_cp = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
    if (cp < min_cp || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += len;
  }
  return std::string_view::npos;
}

class Scanner {
 public:
  Scanner(std::string_view source, const std::vector<std::string>& include_dirs)
      : include_dirs_(include_dirs) {
    // Phase 2: splice backslash-newline, remembering each byte's original line.
    int line = 1;
    text_.reserve(source.size());
    line_of_.reserve(source.size());
    for (size_t k = 0; k < source.size(); ++k) {
      if (source[k] == '\\') {
        size_t nl = k + 1;
        if (nl < source.size() && source[nl] == '\r') ++nl;
        if (nl < source.size() && source[nl] == '\n') {
          ++line;
          k = nl;
          continue;
        }
      }
      text_ += source[k];
      line_of_.push_back(line);
      if (source[k] == '\n') ++line;
    }
  }

  Status Run() {
    WS_RETURN_IF_ERROR(Lex());
    return CheckTokens();
  }

 private:
  template <typename... Args>
  Status Reject(int line, std::string_view rule, fmt::format_string<Args...> f, Args&&... args) {
    return Status::Error("rejected before compiling: line {}: {}. Rule: {}", line,
                         fmt::format(f, std::forward<Args>(args)...), rule);
  }

  char At(size_t k) const { return k < text_.size() ? text_[k] : '\0'; }
  int LineAt(size_t k) const {
    return line_of_.empty() ? 1 : line_of_[std::min(k, line_of_.size() - 1)];
  }

  // Skips spaces, tabs and comments, stopping at a newline (which ends a directive).
  void SkipInlineSpace() {
    for (;;) {
      const char c = At(pos_);
      if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
        ++pos_;
      } else if (c == '/' && At(pos_ + 1) == '*') {
        size_t end = text_.find("*/", pos_ + 2);
        pos_ = end == std::string::npos ? text_.size() : end + 2;
      } else if (c == '/' && At(pos_ + 1) == '/') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else {
        return;
      }
    }
  }

  // A quoted literal starting at pos_ (the opening quote); string contents go to the token.
  void LexQuoted(char quote, int line) {
    std::string contents;
    ++pos_;
    while (pos_ < text_.size() && text_[pos_] != quote && text_[pos_] != '\n') {
      if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) contents += text_[pos_++];
      contents += text_[pos_++];
    }
    if (At(pos_) == quote) ++pos_;
    tokens_.push_back({Token::Kind::kString, std::move(contents), line});
  }

  // R"delim( ... )delim" starting at pos_ (the quote).
  void LexRaw(int line) {
    size_t open = text_.find('(', pos_);
    if (open == std::string::npos || open - pos_ > 17) {
      LexQuoted('"', line);
      return;
    }
    std::string close = ")" + text_.substr(pos_ + 1, open - pos_ - 1) + "\"";
    size_t end = text_.find(close, open + 1);
    size_t stop = end == std::string::npos ? text_.size() : end;
    tokens_.push_back({Token::Kind::kString, text_.substr(open + 1, stop - open - 1), line});
    pos_ = end == std::string::npos ? text_.size() : end + close.size();
  }

  Status Lex() {
    bool line_start = true;
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      const int line = LineAt(pos_);
      if (c == '\n') {
        line_start = true;
        if (in_directive_) {
          tokens_.push_back({Token::Kind::kEndOfDirective, "", line});
          in_directive_ = false;
        }
        ++pos_;
        continue;
      }
      if (std::isspace(static_cast<unsigned char>(c))) {
        ++pos_;
        continue;
      }
      if (c == '/' && (At(pos_ + 1) == '/' || At(pos_ + 1) == '*')) {
        SkipInlineSpace();  // a block comment's newlines do not start a new line (phase 3)
        continue;
      }
      const bool first = line_start;
      line_start = false;
      if (first && (c == '#' || (c == '%' && At(pos_ + 1) == ':'))) {
        pos_ += c == '#' ? 1 : 2;
        WS_RETURN_IF_ERROR(Directive(line));
        continue;
      }
      if (IsIdentStart(static_cast<unsigned char>(c))) {
        size_t start = pos_;
        while (pos_ < text_.size() && IsIdentChar(static_cast<unsigned char>(text_[pos_]))) ++pos_;
        std::string id = text_.substr(start, pos_ - start);
        const char next = At(pos_);
        static const std::array<std::string_view, 9> kPrefixes = {"u8", "u", "U", "L", "R",
                                                                  "u8R", "uR", "UR", "LR"};
        if ((next == '"' || next == '\'') &&
            std::find(kPrefixes.begin(), kPrefixes.end(), id) != kPrefixes.end()) {
          if (next == '"' && id.back() == 'R') {
            LexRaw(line);
          } else {
            LexQuoted(next, line);
          }
          continue;
        }
        tokens_.push_back({Token::Kind::kIdent, std::move(id), line});
        continue;
      }
      if (std::isdigit(static_cast<unsigned char>(c)) ||
          (c == '.' && std::isdigit(static_cast<unsigned char>(At(pos_ + 1))))) {
        // A pp-number, digit separators (1'000) and exponent signs included.
        size_t start = pos_++;
        for (;;) {
          const char d = At(pos_);
          const char prev = text_[pos_ - 1];
          if (IsIdentChar(static_cast<unsigned char>(d)) || d == '.' ||
              (d == '\'' && IsIdentChar(static_cast<unsigned char>(At(pos_ + 1)))) ||
              ((d == '+' || d == '-') &&
               (prev == 'e' || prev == 'E' || prev == 'p' || prev == 'P'))) {
            ++pos_;
          } else {
            break;
          }
        }
        tokens_.push_back({Token::Kind::kNumber, text_.substr(start, pos_ - start), line});
        continue;
      }
      if (c == '"' || c == '\'') {
        LexQuoted(c, line);
        continue;
      }
      if (c == '<' && At(pos_ + 1) == '<' && At(pos_ + 2) == '<') {
        tokens_.push_back({Token::Kind::kPunct, "<<<", line});
        pos_ += 3;
        continue;
      }
      tokens_.push_back({Token::Kind::kPunct, std::string(1, c), line});
      ++pos_;
    }
    return Status::Ok();
  }

  // After the '#' of a directive.
  Status Directive(int line) {
    SkipInlineSpace();
    if (std::isdigit(static_cast<unsigned char>(At(pos_)))) {
      return Reject(line, kDeviceCodeOnlyRule,
                    "a linemarker (# <number> \"file\") renames the source; it is not allowed");
    }
    size_t start = pos_;
    while (pos_ < text_.size() && IsIdentChar(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    const std::string name = text_.substr(start, pos_ - start);
    if (name == "include") return Include(line);
    if (name == "include_next" || name == "import" || name == "embed") {
      return Reject(line, kNoFilesRule, "#{} reads a file", name);
    }
    if (name == "line") {
      return Reject(line, kDeviceCodeOnlyRule,
                    "#line renames the source and renumbers its lines in logs and line info; it "
                    "is not allowed");
    }
    if (std::find(kPlainDirectives.begin(), kPlainDirectives.end(), name) ==
        kPlainDirectives.end()) {
      return Reject(line, kDeviceCodeOnlyRule, "the directive #{} is not allowed", name);
    }
    in_directive_ = true;  // its tokens are checked like code, up to the end of the line
    return Status::Ok();
  }

  Status Include(int line) {
    SkipInlineSpace();
    const char open = At(pos_);
    if (open != '<' && open != '"') {
      return Reject(line, kIncludeRule,
                    "a computed #include (a macro, not <header> or \"header\") is not allowed");
    }
    const char close = open == '<' ? '>' : '"';
    size_t end = pos_ + 1;
    while (end < text_.size() && text_[end] != close && text_[end] != '\n') ++end;
    if (At(end) != close) return Reject(line, kIncludeRule, "an unterminated #include");
    const std::string path = text_.substr(pos_ + 1, end - pos_ - 1);
    const std::string shown = fmt::format("#include {}{}{}", open, path, close);
    pos_ = end + 1;
    while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;  // NVRTC warns about the rest

    if (path.empty()) return Reject(line, kIncludeRule, "{}: an empty name", shown);
    if (path.size() > 200) return Reject(line, kIncludeRule, "{}: the name is too long", shown);
    if (path.front() == '/' || path.front() == '~') {
      return Reject(line, kIncludeRule, "{}: an absolute path", shown);
    }
    for (char ch : path) {
      if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.' || ch == '/' ||
            ch == '-' || ch == '+')) {
        return Reject(line, kIncludeRule, "{}: the character '{}' is not allowed in a header name",
                      shown, ch);
      }
    }
    for (size_t s = 0; s <= path.size();) {
      size_t e = path.find('/', s);
      if (e == std::string::npos) e = path.size();
      std::string_view part(path.data() + s, e - s);
      if (part == ".." || part == "." || part.empty()) {
        return Reject(line, kIncludeRule, "{}: '{}' path components are not allowed", shown,
                      part.empty() ? "empty" : part);
      }
      s = e + 1;
    }
    if (!include_dirs_.empty()) {
      bool found = false;
      for (const auto& dir : include_dirs_) {
        std::error_code ec;
        if (fs::is_regular_file(fs::path(dir) / path, ec)) {
          found = true;
          break;
        }
      }
      if (!found) {
        return Reject(line, kIncludeRule,
                      "{} is not a header of the allowed include directories (host headers such "
                      "as <cstdio> are not available; {})",
                      shown, kDeviceCodeOnlyRule);
      }
    }
    return Status::Ok();
  }

  Status CheckTokens() {
    for (size_t k = 0; k < tokens_.size(); ++k) {
      const Token& t = tokens_[k];
      const Token* next = k + 1 < tokens_.size() ? &tokens_[k + 1] : nullptr;
      auto next_is = [&](std::string_view p) {
        return next && next->kind == Token::Kind::kPunct && next->text == p;
      };
      if (t.kind == Token::Kind::kString) {
        if (t.text.find(".incbin") != std::string::npos) {
          return Reject(t.line, kNoFilesRule, "\".incbin\" in a string (inline assembly)");
        }
        continue;
      }
      if (t.kind == Token::Kind::kPunct && t.text == "<<<") {
        return Reject(t.line, kDeviceCodeOnlyRule,
                      "'<<<' launches a kernel; only the runner launches kernels, from the plan "
                      "(no dynamic parallelism)");
      }
      if (t.kind != Token::Kind::kIdent) continue;
      const std::string& id = t.text;
      if (id == "__has_include" || id == "__has_include_next" || id == "__has_embed") {
        return Reject(t.line, kNoFilesRule, "{} probes the filesystem", id);
      }
      if (id == "main" && next_is("(")) {
        return Reject(t.line, kDeviceCodeOnlyRule, "a main() function is host code");
      }
      if (next_is("(")) {
        for (std::string_view p : kHostApiPrefixes) {
          if (id.compare(0, p.size(), p) == 0) {
            return Reject(t.line, kDeviceCodeOnlyRule,
                          "{}() is CUDA runtime API (host or device-runtime); warpsmith compiles "
                          "without -rdc and links no device runtime",
                          id);
          }
        }
      }
      if (id == "__host__" && !DeviceInSameDeclaration(k)) {
        return Reject(t.line, kDeviceCodeOnlyRule,
                      "__host__ without __device__ declares host code (a __host__ __device__ "
                      "function is fine)");
      }
      if (id == "extern" && next && next->kind == Token::Kind::kString && next->text == "C") {
        WS_RETURN_IF_ERROR(CheckExternC(k + 2));
      }
    }
    return Status::Ok();
  }

  // The identifiers adjacent to tokens_[k] (qualifiers, return type) include __device__.
  bool DeviceInSameDeclaration(size_t k) const {
    for (size_t j = k; j-- > 0 && tokens_[j].kind == Token::Kind::kIdent;) {
      if (tokens_[j].text == "__device__") return true;
    }
    for (size_t j = k + 1; j < tokens_.size() && tokens_[j].kind == Token::Kind::kIdent; ++j) {
      if (tokens_[j].text == "__device__") return true;
    }
    return false;
  }

  // `extern "C"` followed by a declaration (not a `{ ... }` block): it must be device code.
  Status CheckExternC(size_t k) {
    if (k >= tokens_.size() || tokens_[k].text == "{") return Status::Ok();
    const int line = tokens_[k].line;
    for (; k < tokens_.size(); ++k) {
      const Token& t = tokens_[k];
      if (t.kind == Token::Kind::kIdent &&
          (t.text == "__global__" || t.text == "__device__" || t.text == "__constant__" ||
           t.text == "__shared__" || t.text == "__managed__")) {
        return Status::Ok();
      }
      // Attributes with arguments may come first: __launch_bounds__(256) __global__ void k().
      if (t.kind == Token::Kind::kIdent && k + 1 < tokens_.size() && tokens_[k + 1].text == "(" &&
          (t.text == "__launch_bounds__" || t.text == "__cluster_dims__" ||
           t.text == "__maxnreg__" || t.text == "__align__")) {
        int depth = 0;
        for (++k; k < tokens_.size(); ++k) {
          if (tokens_[k].kind != Token::Kind::kPunct) continue;
          if (tokens_[k].text == "(") ++depth;
          if (tokens_[k].text == ")" && --depth == 0) break;
        }
        continue;
      }
      if (t.kind == Token::Kind::kEndOfDirective ||
          (t.kind == Token::Kind::kPunct &&
           (t.text == "(" || t.text == ";" || t.text == "=" || t.text == "{"))) {
        break;
      }
    }
    return Reject(line, kDeviceCodeOnlyRule,
                  "an extern \"C\" declaration without __global__ or __device__ (the runner "
                  "launches extern \"C\" __global__ kernels; helpers are __device__)");
  }

  const std::vector<std::string>& include_dirs_;
  std::string text_;
  std::vector<int> line_of_;
  size_t pos_ = 0;
  bool in_directive_ = false;
  std::vector<Token> tokens_;
};

}  // namespace

Status CheckCandidateSource(std::string_view source, const std::vector<std::string>& include_dirs) {
  if (source.size() > kMaxSourceBytes) {
    return Status::Error("rejected before compiling: the source is {} bytes; the limit is {} bytes",
                         source.size(), kMaxSourceBytes);
  }
  if (size_t nul = source.find('\0'); nul != std::string_view::npos) {
    return Status::Error("rejected before compiling: the source contains a NUL byte at offset {} "
                         "(a candidate is UTF-8 text)",
                         nul);
  }
  if (size_t bad = FirstInvalidUtf8(source); bad != std::string_view::npos) {
    const auto line = 1 + std::count(source.begin(), source.begin() + static_cast<long>(bad), '\n');
    return Status::Error("rejected before compiling: line {}: the source is not valid UTF-8 (byte "
                         "0x{:02x} at offset {})",
                         line, static_cast<unsigned char>(source[bad]), bad);
  }
  return Scanner(source, include_dirs).Run();
}

}  // namespace ws
