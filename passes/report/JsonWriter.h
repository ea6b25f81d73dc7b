//===- JsonWriter.h - Every JSON document ridge prints ----------*- C++ -*-===//
//
// llvm::json prints as it parses: objects with their keys sorted, indent 2.
// Its doubles are "%.17g" (0.85 prints 0.84999999999999998, 5e-6
// 5.0000000000000004e-06): exact but noisy, and snprintf is most of the
// time a large document takes. writeJson prints the same document with each
// non-integral double in the shortest form that reads back as the same
// double (std::to_chars): 0.85, 5e-06. Integers print as before, the
// integral doubles below 1e17 (most counts) through std::to_chars too.
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_PASSES_REPORT_JSONWRITER_H
#define RIDGE_PASSES_REPORT_JSONWRITER_H

#include "llvm/Support/JSON.h"
#include <cassert>

namespace ridge {

/// V into J, as J.value(V) would but for the doubles (see above).
void writeJson(llvm::json::OStream &J, const llvm::json::Value &V);
/// V as a whole document, indent 2, and a newline.
void printJson(llvm::raw_ostream &OS, const llvm::json::Value &V);

/// An object's members given one at a time to a sink, so that one function
/// describes an entry both as a json::Object (ObjectSink, for callers that
/// hold the document) and as text streamed to a json::OStream (StreamSink:
/// no hash map, heap value and sort per entry, which were most of the time a
/// million-entry document took). The members must come in the order
/// llvm::json prints an object's, sorted by key; StreamSink asserts it.
/// Each sink has member(Key, Value); object(Key, Body), Body(Sink &) giving
/// the nested object's members; array(Key, Each), Each(Elements &) giving
/// its elements with value(Value) and object(Body).
class ObjectSink {
public:
  explicit ObjectSink(llvm::json::Object &O) : O(O) {}
  void member(llvm::StringRef Key, llvm::json::Value V) { O[Key] = std::move(V); }
  template <class Body> void object(llvm::StringRef Key, Body B) {
    llvm::json::Object Sub;
    ObjectSink S(Sub);
    B(S);
    O[Key] = std::move(Sub);
  }
  struct Elements {
    llvm::json::Array &A;
    void value(llvm::json::Value V) { A.push_back(std::move(V)); }
    template <class Body> void object(Body B) {
      llvm::json::Object Sub;
      ObjectSink S(Sub);
      B(S);
      A.push_back(std::move(Sub));
    }
  };
  template <class Each> void array(llvm::StringRef Key, Each E) {
    llvm::json::Array A;
    Elements El{A};
    E(El);
    O[Key] = std::move(A);
  }

private:
  llvm::json::Object &O;
};

class StreamSink {
public:
  explicit StreamSink(llvm::json::OStream &J) : J(J) {}
  void member(llvm::StringRef Key, const llvm::json::Value &V) {
    inOrder(Key);
    J.attributeBegin(Key);
    writeJson(J, V);
    J.attributeEnd();
  }
  template <class Body> void object(llvm::StringRef Key, Body B) {
    inOrder(Key);
    J.attributeObject(Key, [&] {
      StreamSink S(J);
      B(S);
    });
  }
  struct Elements {
    llvm::json::OStream &J;
    void value(const llvm::json::Value &V) { writeJson(J, V); }
    template <class Body> void object(Body B) {
      J.object([&] {
        StreamSink S(J);
        B(S);
      });
    }
  };
  template <class Each> void array(llvm::StringRef Key, Each E) {
    inOrder(Key);
    J.attributeArray(Key, [&] {
      Elements El{J};
      E(El);
    });
  }

private:
  void inOrder(llvm::StringRef Key) {
    assert((Last.data() == nullptr || Last < Key) &&
           "StreamSink: members out of llvm::json's (sorted) order");
    Last = Key;
  }
  llvm::json::OStream &J;
  llvm::StringRef Last;
};

} // namespace ridge

#endif
