// Node attributes: typed values keyed by name.  Nodes have a handful of
// attributes, so a flat vector with linear lookup beats a map in both memory
// and time.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor_value.h"

namespace weft {

enum class AttrType { kInt, kFloat, kBool, kDtype, kString, kIntList,
                      kFloatList, kShape, kTensor };

const char* AttrTypeName(AttrType t);

struct AttrValue {
  AttrType type = AttrType::kInt;
  int64_t i = 0;        // int, bool, dtype; the rank for a shape
  double f = 0;
  std::string s;
  std::vector<int64_t> ints;  // int list; the dims of a shape
  std::vector<double> floats;
  TensorValue tensor;   // a host value
};

using AttrMap = std::vector<std::pair<std::string, AttrValue>>;

const AttrValue* FindAttr(const AttrMap& attrs, const char* name);

// Values for schemas' attribute defaults.
inline AttrValue BoolValue(bool b) {
  AttrValue v;
  v.type = AttrType::kBool;
  v.i = b;
  return v;
}
inline AttrValue IntListValue(std::vector<int64_t> ints) {
  AttrValue v;
  v.type = AttrType::kIntList;
  v.ints = std::move(ints);
  return v;
}
inline AttrValue StringValue(const char* s) {
  AttrValue v;
  v.type = AttrType::kString;
  v.s = s;
  return v;
}
void SetAttr(AttrMap* attrs, const std::string& name, AttrValue value);

}  // namespace weft
