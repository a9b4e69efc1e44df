package scratchpad

import (
	"crypto/sha512"
	"encoding/base32"
	"encoding/binary"
	"regexp"
	"strconv"
	"strings"
)

// Caller is the context of a call (SP-1.1). Thread is empty outside a thread.
type Caller struct {
	Requester string
	Channel   string
	Thread    string
	InThread  bool
}

// Names are a caller's directory names: its session's and its requester's (SP-1.2).
type Names struct {
	Session   string
	Requester string
}

// nameLength is how many base32 characters of the hash a name keeps: 100 bits, so two of the
// names a deployment ever makes do not collide in practice.
const nameLength = 20

// maxSaltAttempts bounds the search for a name free of its own identifiers.
const maxSaltAttempts = 64

// lowerBase32 has no '0', '1', '8', '9' and no upper case, so a name can never contain an
// identifier with one of those characters.
var lowerBase32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// sessionNamePattern is the shape of every session directory this scheme writes. The sweeper
// touches only these (SP-5.4, read for this scheme's names rather than SP-1.2's digest).
var sessionNamePattern = regexp.MustCompile(`^[tc]-[a-z2-7]{20}$`)

// NamesOf derives a caller's directory names from its identifiers alone: no disk, no state, so
// they are the same after a restart. The function is this implementation's own (SP-1.2 leaves it
// open): SHA-512/256 over length-prefixed parts, lower-case base32.
func NamesOf(caller Caller) Names {
	var session string
	if caller.InThread {
		session = deriveName("t-", "thread", caller.Channel, caller.Thread)
	} else {
		session = deriveName("c-", "pairing", caller.Channel, caller.Requester)
	}
	return Names{Session: session, Requester: deriveName("", "requester", caller.Requester)}
}

// IsSessionName reports whether a directory name under the root is one this scheme writes.
func IsSessionName(name string) bool { return sessionNamePattern.MatchString(name) }

// deriveName hashes the parts under a tag; if the result happens to contain one of the
// identifiers it came from (a one-letter identifier is likely to), it hashes again with a salt
// counter. The search depends on the identifiers only, so it is as stable as the hash.
func deriveName(prefix, tag string, parts ...string) string {
	var name string
	for salt := 0; salt < maxSaltAttempts; salt++ {
		name = prefix + hashParts(tag, salt, parts)
		if !containsAnyFold(name, parts) {
			return name
		}
	}
	return name
}

func hashParts(tag string, salt int, parts []string) string {
	hash := sha512.New512_256()
	writePart := func(part string) {
		var length [8]byte
		binary.BigEndian.PutUint64(length[:], uint64(len(part)))
		hash.Write(length[:])
		hash.Write([]byte(part))
	}
	writePart("tidemark-go-scratchpad/" + tag)
	if salt > 0 {
		writePart("salt " + strconv.Itoa(salt))
	}
	for _, part := range parts {
		writePart(part)
	}
	return lowerBase32.EncodeToString(hash.Sum(nil))[:nameLength]
}

func containsAnyFold(name string, identifiers []string) bool {
	lowered := strings.ToLower(name)
	for _, identifier := range identifiers {
		if identifier != "" && strings.Contains(lowered, strings.ToLower(identifier)) {
			return true
		}
	}
	return false
}
