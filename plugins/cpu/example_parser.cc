// Reading one feature of a tf.train.Example (example_parser.h).
//
// Wire reading with libprotobuf's CodedInputStream rather than classes
// generated from example.proto: generated classes would register
// tensorflow.Example in libprotobuf's process-wide descriptor pool, where a
// program that also links TensorFlow's (or another plugin's) copy of the
// same messages would collide with them; and a kernel asked for one feature
// need not build the whole map.  Two passes over the bytes: the first finds
// the last map entry with the key (checking the framing of everything), the
// second reads that entry's Feature, without copying anything but numbers.
#include "example_parser.h"

#include <climits>
#include <cstring>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

namespace weft_cpu {
namespace {

using google::protobuf::io::CodedInputStream;
using google::protobuf::internal::WireFormatLite;

constexpr uint32_t Tag(int field, int wire_type) {
  return static_cast<uint32_t>(field) << 3 | static_cast<uint32_t>(wire_type);
}
constexpr int kVarint = 0, kLengthDelimited = 2, kFixed32 = 5;

// One message's bytes within the serialized Example: `base` is where they
// start, so CurrentPosition() + base is an offset in the Example.
struct Reader {
  CodedInputStream in;
  size_t base;
  std::string* error;

  Reader(const unsigned char* data, int size, size_t base, std::string* error)
      : in(data, size), base(base), error(error) {}

  size_t Offset() const { return base + in.CurrentPosition(); }

  bool Fail(const char* what) {
    *error = std::string("malformed Example: ") + what + " at byte " +
             std::to_string(Offset());
    return false;
  }

  // The next tag into *tag, 0 at the end of the current message; false
  // when the bytes there are no tag.
  bool Next(uint32_t* tag, const char* message) {
    *tag = in.ReadTag();
    if (*tag == 0 && !in.ConsumedEntireMessage()) {
      return Fail((std::string("invalid field tag in ") + message).c_str());
    }
    return true;
  }

  bool Skip(uint32_t tag, const char* message) {
    if (WireFormatLite::SkipField(&in, tag)) return true;
    return Fail((std::string("invalid or truncated field in ") + message)
                    .c_str());
  }

  // A length-delimited field's length, checked against what remains.
  bool Length(int* out, const char* field) {
    uint32_t n = 0;
    if (!in.ReadVarint32(&n) || n > static_cast<uint32_t>(in.BytesUntilLimit()))
      return Fail((std::string("truncated ") + field).c_str());
    *out = static_cast<int>(n);
    return true;
  }
};

bool ReadFloats(Reader* r, ExampleFeature* out) {
  uint32_t tag;
  while (r->Next(&tag, "FloatList") && tag != 0) {
    if (tag == Tag(1, kFixed32)) {
      uint32_t bits;
      if (!r->in.ReadLittleEndian32(&bits)) return r->Fail("truncated float");
      float v;
      std::memcpy(&v, &bits, 4);
      out->floats.push_back(v);
    } else if (tag == Tag(1, kLengthDelimited)) {
      int n = 0;
      if (!r->Length(&n, "packed floats")) return false;
      if (n % 4 != 0) return r->Fail("packed floats of a length not a multiple of 4");
      const size_t old = out->floats.size();
      out->floats.resize(old + n / 4);
      if (!r->in.ReadRaw(out->floats.data() + old, n))
        return r->Fail("truncated packed floats");
    } else if (!r->Skip(tag, "FloatList")) {
      return false;
    }
  }
  return tag == 0 && r->error->empty();
}

bool ReadInt64s(Reader* r, ExampleFeature* out) {
  uint32_t tag;
  while (r->Next(&tag, "Int64List") && tag != 0) {
    uint64_t v;
    if (tag == Tag(1, kVarint)) {
      if (!r->in.ReadVarint64(&v)) return r->Fail("invalid int64 varint");
      out->int64s.push_back(static_cast<int64_t>(v));
    } else if (tag == Tag(1, kLengthDelimited)) {
      int n = 0;
      if (!r->Length(&n, "packed int64s")) return false;
      CodedInputStream::Limit limit = r->in.PushLimit(n);
      while (r->in.BytesUntilLimit() > 0) {
        if (!r->in.ReadVarint64(&v)) return r->Fail("invalid packed int64 varint");
        out->int64s.push_back(static_cast<int64_t>(v));
      }
      r->in.PopLimit(limit);
    } else if (!r->Skip(tag, "Int64List")) {
      return false;
    }
  }
  return tag == 0 && r->error->empty();
}

bool ReadBytes(Reader* r, ExampleFeature* out) {
  uint32_t tag;
  while (r->Next(&tag, "BytesList") && tag != 0) {
    if (tag == Tag(1, kLengthDelimited)) {
      int n = 0;
      if (!r->Length(&n, "bytes value")) return false;
      out->bytes.emplace_back(r->Offset(), static_cast<size_t>(n));
      r->in.Skip(n);
    } else if (!r->Skip(tag, "BytesList")) {
      return false;
    }
  }
  return tag == 0 && r->error->empty();
}

// Merges a Feature message into *out, as protobuf merges: a list of the
// kind already set appends, a list of another kind replaces it.
bool ReadFeature(Reader* r, ExampleFeature* out) {
  uint32_t tag;
  while (r->Next(&tag, "Feature") && tag != 0) {
    const int field = static_cast<int>(tag >> 3);
    if ((tag & 7) != kLengthDelimited || field < 1 || field > 3) {
      if (!r->Skip(tag, "Feature")) return false;
      continue;
    }
    const auto kind = static_cast<ExampleFeature::Kind>(field);
    if (out->kind != kind) {
      *out = ExampleFeature();
      out->kind = kind;
    }
    int n = 0;
    if (!r->Length(&n, ExampleKindName(kind))) return false;
    CodedInputStream::Limit limit = r->in.PushLimit(n);
    bool ok = kind == ExampleFeature::kBytes   ? ReadBytes(r, out)
              : kind == ExampleFeature::kFloat ? ReadFloats(r, out)
                                               : ReadInt64s(r, out);
    if (!ok) return false;
    r->in.PopLimit(limit);
  }
  return tag == 0 && r->error->empty();
}

// A map entry { string key = 1; Feature value = 2; }: whether its (last)
// key is `key`.
bool EntryHasKey(Reader* r, const unsigned char* data, const std::string& key,
                 bool* match) {
  *match = key.empty();  // an entry without a key has key ""
  uint32_t tag;
  while (r->Next(&tag, "a feature map entry") && tag != 0) {
    if (tag == Tag(1, kLengthDelimited)) {
      int n = 0;
      if (!r->Length(&n, "feature key")) return false;
      *match = static_cast<size_t>(n) == key.size() &&
               std::memcmp(data + r->Offset(), key.data(), n) == 0;
      r->in.Skip(n);
    } else if (!r->Skip(tag, "a feature map entry")) {
      return false;
    }
  }
  return tag == 0 && r->error->empty();
}

// Runs `body(reader)` over each length-delimited field `field` of the
// current message, skipping the others.
template <typename Body>
bool EachMessageField(Reader* r, int field, const char* message,
                      const char* what, Body&& body) {
  uint32_t tag;
  while (r->Next(&tag, message) && tag != 0) {
    if (tag != Tag(field, kLengthDelimited)) {
      if (!r->Skip(tag, message)) return false;
      continue;
    }
    int n = 0;
    if (!r->Length(&n, what)) return false;
    CodedInputStream::Limit limit = r->in.PushLimit(n);
    if (!body(n)) return false;
    r->in.PopLimit(limit);
  }
  return tag == 0 && r->error->empty();
}

}  // namespace

const char* ExampleKindName(ExampleFeature::Kind kind) {
  switch (kind) {
    case ExampleFeature::kBytes: return "bytes_list";
    case ExampleFeature::kFloat: return "float_list";
    case ExampleFeature::kInt64: return "int64_list";
    case ExampleFeature::kNone: break;
  }
  return "no list";
}

std::string FindExampleFeature(const unsigned char* data, size_t size,
                               const std::string& key, bool* found,
                               ExampleFeature* out) {
  *found = false;
  *out = ExampleFeature();
  if (size > INT_MAX)
    return "a serialized Example of " + std::to_string(size) +
           " bytes; protobuf reads at most 2 GiB";
  std::string error;
  // Pass 1: Example.features (1) -> Features.feature (1) map entries.
  Reader r(data, static_cast<int>(size), 0, &error);
  size_t entry_start = 0, entry_size = 0;
  bool ok = EachMessageField(&r, 1, "Example", "Features", [&](int) {
    return EachMessageField(&r, 1, "Features", "a feature map entry",
                            [&](int n) {
      const size_t start = r.Offset();
      bool match = false;
      if (!EntryHasKey(&r, data, key, &match)) return false;
      if (match) {
        *found = true;
        entry_start = start;
        entry_size = static_cast<size_t>(n);
      }
      return true;
    });
  });
  if (!ok) return error.empty() ? "malformed Example" : error;
  if (!*found) return "";
  // Pass 2: the entry's value (2) fields, merged.
  Reader e(data + entry_start, static_cast<int>(entry_size), entry_start,
           &error);
  ok = EachMessageField(&e, 2, "a feature map entry", "Feature",
                        [&](int) { return ReadFeature(&e, out); });
  if (!ok) return error.empty() ? "malformed Example" : error;
  return "";
}

}  // namespace weft_cpu
