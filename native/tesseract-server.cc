// folio-tesseract: tesseract kept resident for many pages (docs/ocr.md
// "Resident tesseract", docs/adr/0009-resident-tesseract.md).
//
// The tesseract CLI loads its model for every page and is a new process for
// every page; this program loads a language once and reads page after page
// sent on stdin, answering on stdout, one request at a time. Its parent
// (internal/extraction/engines/tesseract-server.ts) runs it in the parser
// jail like the CLI, with no secret in its environment.
//
// It parses no image format: a request carries raw pixels (the parent has
// them from pdftoppm's PGM or from the image decoder child), so the code a
// hostile page reaches in this long-lived process is tesseract's
// recognition, not an image decoder.
//
// Frames, both ways (as internal/platform/decoder/frames.ts):
//   u32 length, header, u32 length, body   (lengths big-endian)
// Request header: a JSON string of space-separated fields,
//   "<op> <lang> <psm> <width> <height> <channels> <dpi>"
//   op: tsv | hocr; lang: tesseract's -l (letters, digits, _ and +);
//   channels: 1 (grey), 3 (RGB) or 4 (RGBA); dpi: 0 when unknown.
// Request body: width × height × channels bytes, row by row.
// Answer header: {"ok":true} with the text as the body (TSV with the CLI's
// header line, or the page's hOCR), or {"error":"<code>","message":"…"}.
// A stream that is not this protocol ends the program (exit 2).
#include <tesseract/baseapi.h>

#include <malloc.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace {

constexpr uint32_t kHeaderLimit = 64 * 1024;
// The largest page: the service's pixel budget is 40 MP; 100 MP of RGBA leaves room.
constexpr uint64_t kBodyLimit = 400ull * 1024 * 1024;
// Languages kept loaded at once (each 20–100 MB); the least recently used goes first.
constexpr size_t kLoadedLimit = 3;
const char kTsvHeader[] = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n";

// Moves n bytes by calls of io (read or write), across short counts and
// EINTR; false at the end of the input or on an error.
template <typename Byte, typename Io>
bool transferAll(Byte* p, size_t n, Io io) {
  while (n > 0) {
    ssize_t k = io(p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

bool readAll(void* buf, size_t n) {
  return transferAll(static_cast<char*>(buf), n, [](char* p, size_t k) { return read(0, p, k); });
}

bool writeAll(const void* buf, size_t n) {
  return transferAll(static_cast<const char*>(buf), n, [](const char* p, size_t k) { return write(1, p, k); });
}

bool readU32(uint32_t& v) {
  unsigned char b[4];
  if (!readAll(b, 4)) return false;
  v = (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | uint32_t{b[3]};
  return true;
}

void putU32(std::string& out, uint32_t v) {
  out.push_back(static_cast<char>(v >> 24));
  out.push_back(static_cast<char>(v >> 16));
  out.push_back(static_cast<char>(v >> 8));
  out.push_back(static_cast<char>(v));
}

bool answer(const std::string& header, const char* body, size_t bodyLength) {
  std::string head;
  putU32(head, static_cast<uint32_t>(header.size()));
  head += header;
  putU32(head, static_cast<uint32_t>(bodyLength));
  return writeAll(head.data(), head.size()) && writeAll(body, bodyLength);
}

std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c < 0x20) {
      char esc[8];
      snprintf(esc, sizeof esc, "\\u%04x", c);
      out += esc;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out + "\"";
}

bool fail(const std::string& code, const std::string& message) {
  return answer("{\"error\":" + jsonString(code) + ",\"message\":" + jsonString(message) + "}", "", 0);
}

struct Request {
  std::string op, lang;
  int psm = 3, width = 0, height = 0, channels = 0, dpi = 0;
};

bool validLang(const std::string& lang) {
  if (lang.empty() || lang.size() > 64) return false;
  for (char c : lang) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '+';
    if (!ok) return false;
  }
  return true;
}

bool parseInt(const std::string& s, int lo, int hi, int& out) {
  if (s.empty() || s.size() > 9) return false;
  long v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  if (v < lo || v > hi) return false;
  out = static_cast<int>(v);
  return true;
}

// The header: a JSON string without escapes, its fields separated by single spaces.
bool parseRequest(const std::string& header, Request& req) {
  if (header.size() < 2 || header.front() != '"' || header.back() != '"') return false;
  std::vector<std::string> fields;
  std::string field;
  for (size_t i = 1; i + 1 < header.size(); i++) {
    char c = header[i];
    if (c == '\\') return false;
    if (c == ' ') {
      fields.push_back(field);
      field.clear();
    } else {
      field.push_back(c);
    }
  }
  fields.push_back(field);
  if (fields.size() != 7) return false;
  req.op = fields[0];
  req.lang = fields[1];
  return (req.op == "tsv" || req.op == "hocr") && validLang(req.lang) && parseInt(fields[2], 0, 13, req.psm) &&
         parseInt(fields[3], 1, 1 << 20, req.width) && parseInt(fields[4], 1, 1 << 20, req.height) &&
         parseInt(fields[5], 1, 4, req.channels) && req.channels != 2 && parseInt(fields[6], 0, 100000, req.dpi);
}

// Loaded languages, most recently used first.
std::list<std::pair<std::string, std::unique_ptr<tesseract::TessBaseAPI>>> loaded;

tesseract::TessBaseAPI* apiFor(const std::string& lang) {
  for (auto it = loaded.begin(); it != loaded.end(); ++it) {
    if (it->first == lang) {
      loaded.splice(loaded.begin(), loaded, it);
      return loaded.front().second.get();
    }
  }
  auto api = std::make_unique<tesseract::TessBaseAPI>();
  // The CLI's `tsv` and `hocr` configs only ask for their renderer, which this program calls itself.
  if (api->Init(nullptr, lang.c_str(), tesseract::OEM_DEFAULT) != 0) return nullptr;
  api->SetVariable("hocr_font_info", "0");
  loaded.emplace_front(lang, std::move(api));
  while (loaded.size() > kLoadedLimit) loaded.pop_back();
  return loaded.front().second.get();
}

bool serve(const Request& req, const std::vector<unsigned char>& pixels) {
  tesseract::TessBaseAPI* api = apiFor(req.lang);
  if (api == nullptr) return fail("language", "tesseract could not load the language " + req.lang);
  api->SetPageSegMode(static_cast<tesseract::PageSegMode>(req.psm));
  api->SetImage(pixels.data(), req.width, req.height, req.channels, req.width * req.channels);
  if (req.dpi > 0) api->SetSourceResolution(req.dpi);
  if (api->Recognize(nullptr) != 0) {
    api->Clear();
    return fail("recognize", "tesseract could not read the page");
  }
  // Page 0, as the CLI numbers the only page of an image on stdin.
  std::unique_ptr<char[]> text(req.op == "tsv" ? api->GetTSVText(0) : api->GetHOCRText(0));
  api->Clear();
  std::string body = req.op == "tsv" ? std::string(kTsvHeader) : std::string();
  if (text) body += text.get();
  bool ok = answer("{\"ok\":true}", body.data(), body.size());
  // The page's buffers go back to the system: a program waits between pages holding its model only.
  malloc_trim(0);
  return ok;
}

}  // namespace

int main() {
  for (;;) {
    uint32_t headerLength;
    if (!readU32(headerLength)) return 0;  // the parent closed stdin: done
    if (headerLength > kHeaderLimit) return 2;
    std::string header(headerLength, '\0');
    uint32_t bodyLength;
    if (!readAll(header.data(), headerLength) || !readU32(bodyLength)) return 2;
    if (bodyLength > kBodyLimit) return 2;
    std::vector<unsigned char> body(bodyLength);
    if (bodyLength > 0 && !readAll(body.data(), bodyLength)) return 2;
    Request req;
    bool ok;
    if (!parseRequest(header, req)) {
      ok = fail("request", "a request this program does not understand");
    } else if (static_cast<uint64_t>(req.width) * req.height * req.channels != bodyLength) {
      ok = fail("request", "the pixels are not width × height × channels bytes");
    } else {
      ok = serve(req, body);
    }
    if (!ok) return 2;
  }
}
