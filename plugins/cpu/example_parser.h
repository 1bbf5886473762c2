// One feature of a serialized tf.train.Example, read from the protobuf wire
// format.  Plain functions over bytes, free of the host table, so the fuzz
// target (tests/fuzz/decoders.cc) drives exactly what the kernel runs.
//
// The messages (tensorflow/core/example/{example,feature}.proto):
//   Example   { Features features = 1; }
//   Features  { map<string, Feature> feature = 1; }
//   Feature   { oneof kind { BytesList bytes_list = 1;
//                            FloatList float_list = 2;
//                            Int64List int64_list = 3; } }
//   BytesList { repeated bytes value = 1; }
//   FloatList { repeated float value = 1 [packed = true]; }
//   Int64List { repeated int64 value = 1 [packed = true]; }
// Parsed as protobuf parses them: the last map entry of a key wins, a
// oneof's last kind wins, repeated numbers may be packed or not, and
// unknown fields are skipped.
#ifndef WEFT_PLUGINS_CPU_EXAMPLE_PARSER_H_
#define WEFT_PLUGINS_CPU_EXAMPLE_PARSER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace weft_cpu {

struct ExampleFeature {
  enum Kind { kNone, kBytes, kFloat, kInt64 };
  // kNone: the key is present with no list set (no values of any kind).
  Kind kind = kNone;
  std::vector<float> floats;
  std::vector<int64_t> int64s;
  // Each bytes value as (offset, size) in the serialized Example.
  std::vector<std::pair<size_t, size_t>> bytes;
};

// "bytes_list", "float_list", "int64_list" or "no list".
const char* ExampleKindName(ExampleFeature::Kind kind);

// Looks up feature `key` in the serialized Example `data`: sets *found and,
// when found, *out.  Returns "" on success, else why `data` is not a valid
// Example (the byte offset included).
std::string FindExampleFeature(const unsigned char* data, size_t size,
                               const std::string& key, bool* found,
                               ExampleFeature* out);

}  // namespace weft_cpu

#endif  // WEFT_PLUGINS_CPU_EXAMPLE_PARSER_H_
