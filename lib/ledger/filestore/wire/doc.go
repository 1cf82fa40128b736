// Package wire is the stored form of a record in the file store's job
// logs (lib/ledger/filestore, package joblog's frames): a claim frame
// holds the whole record (Encode, Decode), each later version a delta
// against that claim, the keys whose values changed (EncodeDelta,
// ApplyDelta). Both are one line of canonical JSON, a record's JSON form
// (lib/ledger/internal/form: its structs, its field table, its canonical
// writer) with "v":1 in front of a claim; Decode and ApplyDelta check
// what they read as lib/ledger's Record.Validate does, and call anything
// else ledger.ErrCorrupt.
//
// Two accelerators of lib/internal/shortcut's register live here:
// canonical-codec's reader (codec.go: the canonical form read without
// encoding/json; its writer is form's), and stored-bytes
// (AppendStoredJSON, StoredFate: list --json's objects and what a prune
// decides by, read from a claim's and a delta's bytes without decoding
// them). Each declines what it cannot vouch for, and the general path
// (encoding/json, Decode and ApplyDelta, then MarshalJSON) is taken;
// FuzzCanonicalDecode, FuzzCanonicalEncode and FuzzStoredJSON hold them
// to it.
//
//	lib/ledger/internal/form     structs, field table, canonical writer
//	  ▲              ▲
//	  │    lib/ledger               Record, Validate, MarshalJSON, Field; Record.Form
//	  │      ▲
//	lib/ledger/filestore/wire    this package
//	  ▲
//	lib/ledger/filestore
//
// pgstore keeps a record in columns and never calls this package (it
// links it only through lib/ledger/location, which opens either store).
//
// # Synopsis
//
//	b := wire.Encode(rec)                       // a claim frame's payload
//	rec, err := wire.Decode(b, id)              // ledger.ErrCorrupt if not a legal record
//	d := wire.EncodeDelta(next, rec)            // an update frame's payload
//	next, err = wire.ApplyDelta(rec, d)
//	out, st, ok := wire.AppendStoredJSON(out, b, d, id) // MarshalJSON's object, from the bytes
//
// The stored form's version is 1, the first release's; a record of
// another "v" is ErrCorrupt.
package wire
