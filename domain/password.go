package domain

import (
	_ "embed"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// PasswordHint is the help shown under every field where a person
// chooses a password.
const PasswordHint = "At least 12 characters. Avoid common passwords, one character repeated, runs such as 123456789012 or qwertyuiop, " +
	"and your email address or name with digits added: a few unrelated words make a strong passphrase."

//go:embed commonpasswords.txt
var commonPasswordsText string

// commonPasswords is the blocklist, lower-cased, with each entry also in
// its de-leeted form (p@ssw0rd is password).
var commonPasswords = sync.OnceValue(func() map[string]struct{} {
	set := map[string]struct{}{}
	for line := range strings.Lines(commonPasswordsText) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.ToLower(line)
		set[line] = struct{}{}
		set[unleet(line)] = struct{}{}
	}
	return set
})

// ValidatePassword is the rule for every password a person chooses (NIST
// SP 800-63B): at least MinPasswordLen characters and at most
// MaxPasswordBytes bytes, not only whitespace, not on the blocklist of
// common passwords (whatever its case, with digits or symbols around a
// listed word), not one character or a short group repeated, not a run of
// letters, digits or keys, and not made of the person's email address
// (madeOfEmail: NIST's "context-specific words"). email may be empty when
// no person is known yet. The *ValidationError says why a password is
// refused.
func ValidatePassword(password, email string) error {
	if msg := passwordProblem(password, strings.ToLower(strings.TrimSpace(email))); msg != "" {
		return &ValidationError{Code: CodeValidation, Message: msg}
	}
	return nil
}

func passwordProblem(password, email string) string {
	lower := strings.ToLower(strings.Join(strings.Fields(password), ""))
	switch {
	case utf8.RuneCountInString(password) < MinPasswordLen:
		return fmt.Sprintf("Use at least %d characters.", MinPasswordLen)
	case len(password) > MaxPasswordBytes:
		return fmt.Sprintf("Use at most %d bytes.", MaxPasswordBytes)
	case lower == "":
		return "A password cannot be only spaces."
	case repeated(lower):
		return "A password cannot be one character, or a few, repeated: such passwords are guessed first."
	case sequence(lower):
		return "A password cannot be a run of letters, digits or keys such as 123456789012, abcdefghijkl or qwertyuiop."
	case commonPassword(lower):
		return "This password is too common: it is on the list of passwords attackers try first. Choose a passphrase of a few unrelated words."
	case email != "" && madeOfEmail(lower, email):
		return "A password cannot be made mostly of your email address or the name before its @, even with digits or symbols added: " +
			"it is the first thing an attacker who knows the address tries."
	}
	return ""
}

// commonPassword reports whether p (lower-cased, without whitespace), or
// the word left when digits and symbols around it are taken away, is on
// the blocklist, as written or de-leeted.
func commonPassword(p string) bool {
	set := commonPasswords()
	core := strings.TrimFunc(p, func(r rune) bool { return !unicode.IsLetter(r) })
	for _, c := range []string{p, unleet(p), core, unleet(core)} {
		if utf8.RuneCountInString(c) < 4 {
			continue
		}
		if _, ok := set[c]; ok {
			return true
		}
	}
	return false
}

var leetReplacer = strings.NewReplacer("@", "a", "4", "a", "0", "o", "3", "e", "$", "s", "5", "s", "1", "i", "!", "i", "7", "t")

func unleet(s string) string { return leetReplacer.Replace(s) }

// repeated reports whether p is one group of up to four characters
// repeated (aaaaaaaaaaaa, abcabcabcabc, 121212121212).
func repeated(p string) bool {
	rs := []rune(p)
	for n := 1; n <= 4 && n < len(rs); n++ {
		if len(rs)%n != 0 {
			continue
		}
		if strings.Repeat(string(rs[:n]), len(rs)/n) == p {
			return true
		}
	}
	return false
}

// keyRuns are the orders people type in: the alphabet, digits (wrapping,
// so 123456789012 is one), keyboard rows and columns.
var keyRuns = []string{
	"abcdefghijklmnopqrstuvwxyz",
	"01234567890123456789012345678901234567890",
	"qwertyuiopasdfghjklzxcvbnm",
	"qwertzuiopasdfghjklyxcvbnm",
	"azertyuiopqsdfghjklmwxcvbn",
	"1qaz2wsx3edc4rfv5tgb6yhn7ujm8ik9ol0p",
	"qazwsxedcrfvtgbyhnujmikolp",
	"!@#$%^&*()_+",
	"`1234567890-=qwertyuiop[]\\asdfghjkl;'zxcvbnm,./",
}

// sequence reports whether p is a stretch of one of the keyRuns, forwards
// or backwards.
func sequence(p string) bool {
	for _, run := range keyRuns {
		if strings.Contains(run, p) || strings.Contains(reverse(run), p) {
			return true
		}
	}
	return false
}

func reverse(s string) string {
	rs := []rune(s)
	for i, j := 0, len(rs)-1; i < j; i, j = i+1, j-1 {
		rs[i], rs[j] = rs[j], rs[i]
	}
	return string(rs)
}

// emailWords are the words of email a password must not be made of: the
// address, its local part, and that part without its +tag, as written and
// without the separators people leave out when they type a name
// (ada.lovelace+work@example.com gives ada.lovelace+work, ada.lovelace and
// adalovelace). Words under 3 characters are left out: they are in too
// many good passphrases by chance.
func emailWords(email string) []string {
	local, _, _ := strings.Cut(email, "@")
	untagged, _, _ := strings.Cut(local, "+")
	var words []string
	for _, w := range []string{email, local, untagged, nameSeparators.Replace(untagged)} {
		if utf8.RuneCountInString(w) >= 3 && !slices.Contains(words, w) {
			words = append(words, w)
		}
	}
	return words
}

// nameSeparators drops what people put between the parts of a name.
var nameSeparators = strings.NewReplacer(".", "", "_", "", "-", "", "'", "")

// madeOfEmail reports whether p (lower-cased, without whitespace) is made
// of one of email's words, as written or de-leeted, as zxcvbn weighs a
// person's own data: it is the word with only digits and symbols around
// it (rita@example.com123, 2026rita!!), or the word is most of it (more
// than what is left when it is taken out), so that the rest is too short
// to carry the password's strength.
func madeOfEmail(p, email string) bool {
	for _, w := range emailWords(email) {
		if madeOf(p, w) || madeOf(unleet(p), unleet(w)) {
			return true
		}
	}
	return false
}

// madeOf reports whether p is w, apart from separators and the digits and
// symbols around it, or holds w as most of it.
func madeOf(p, w string) bool {
	if core := letterCore(w); core != "" && letterCore(p) == core {
		return true
	}
	if !strings.Contains(p, w) {
		return false
	}
	rest := strings.ReplaceAll(p, w, "")
	return !strings.ContainsFunc(rest, unicode.IsLetter) || utf8.RuneCountInString(rest) < utf8.RuneCountInString(w)
}

// letterCore is s without separators and without the characters other
// than letters at its ends.
func letterCore(s string) string {
	return strings.TrimFunc(nameSeparators.Replace(s), func(r rune) bool { return !unicode.IsLetter(r) })
}
