// Where a value came from at run time: a chain rooted in the frame (a local slot, a global,
// a closure cell), extended by attribute and item accesses. Sources name graph inputs and
// say what guards check: `L['x']`, `G['w']`, `L['self'].fc.weight`, `L['xs'][0]`,
// `type(L['x'])`, `builtins['len']`, and `closure['y']` for the contents of the function's
// own free-variable cell named `y`. A tensor's stride or storage offset (`L['x'].stride()[0]`)
// is a source of its own: under dynamic shapes it can be a symbol that a graph input carries.
//
// Contract shared by the tracer (which creates sources for values it reads) and the guard
// tree (which turns them into accessors). Sources are immutable and shared.
#pragma once

#include <memory>
#include <string>

#include "python/gc.h"
#include "python/ref.h"

namespace bytegraph::guards {

struct Source;
using SourcePtr = std::shared_ptr<const Source>;

struct Source {
  enum class Kind {
    Local,    // frame slot `index` (in localsplus order), named `name`
    Global,   // the function's globals dict, key `name`
    Builtin,  // the builtins dict, key `name`
    Closure,  // contents of closure cell `index` of the function, named `name`
    Attr,     // getattr(base, name)
    Item,     // base[key]
    ViewedDict,  // the dict a dict view (base: d.keys(), d.values(), d.items()) shows
    StoredItem,  // base[key] from the storage of base's dict, list or tuple base class, read
                 // without running a subclass's own __getitem__
    Type,     // type(base)
    Held,     // an object the guards hold (another module's globals dict), named `name`
    Globals,  // the frame's globals dict itself
    InstanceDict,  // base.__dict__, read without running the class's own attribute hooks
    Stride,         // base.stride()[index]: a tensor's stride in dimension `index`
    StorageOffset,  // base.storage_offset()
  };
  Kind kind;
  SourcePtr base;   // Attr, Item, Type
  std::string name;
  int index = -1;
  py::Ref<> key;    // Item: the key (an int, str or other hashable constant); Held: the object

  // The readable name used in graph placeholders, guard listings and failure reasons.
  std::string repr() const;
};

SourcePtr local_source(std::string name, int slot);
SourcePtr global_source(std::string name);
SourcePtr builtin_source(std::string name);
SourcePtr closure_source(std::string name, int index);
SourcePtr attr_source(SourcePtr base, std::string name);
SourcePtr item_source(SourcePtr base, py::Ref<> key);
// The dict `base`, a dict view, shows (found as the view's referent, on every version).
SourcePtr viewed_dict_source(SourcePtr base);
// The dict a dict view shows (borrowed), or null for anything else.
PyObject* viewed_dict(PyObject* view);
// An item of a dict, list or tuple subclass instance as its base class stores it.
SourcePtr stored_item_source(SourcePtr base, py::Ref<> key);
SourcePtr type_source(SourcePtr base);
// A root that is a fixed object rather than a place in the frame: the globals dict of a
// function from another module (pinned by that function's guards), read again on each check.
SourcePtr held_source(py::Ref<> object, std::string name);
SourcePtr globals_dict_source();
// `cls.name` read from the class itself, held by the guards. What a class holds (its methods,
// its __call__, a property) is guarded there once, however many instances reach it; the
// instance's own guards pin which class it has.
SourcePtr class_attr_source(PyObject* cls, std::string name);
SourcePtr class_source(PyObject* cls);
// base.__dict__[name]: an attribute stored on the instance itself.
SourcePtr instance_dict_source(SourcePtr base, std::string name);
SourcePtr instance_dict_of(SourcePtr base);
SourcePtr stride_source(SourcePtr tensor, int dim);
SourcePtr storage_offset_source(SourcePtr tensor);

// The source as a plain tuple, (kind, name, index, key, base spec or None), and back: how a
// warm-start record stores the sources of its guards (source_spec.cpp). A held class is
// named again with its address in this process.
const char* source_kind_name(Source::Kind kind);
py::Ref<> source_spec(const SourcePtr& source);
SourcePtr source_from_spec(PyObject* spec);

// Visits the key of `source` and of its bases, as far as the holder of `source` is the only
// owner of each (python/gc.h).
void traverse_source(const SourcePtr& source, py::Visitor& visit);

}  // namespace bytegraph::guards
