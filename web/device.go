package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// A device cookie marks a browser where an account has signed in (OWASP's
// "device cookies"): failed logins from it count against that browser
// alone, not against the account nor the address, so that strangers who
// guess at an account, or from the owner's network, cannot lock its
// owner out. It holds the account's email and an
// expiry, signed with HMAC-SHA256; it grants nothing by itself. A cookie
// rather than a list of known addresses, because it follows the person
// across networks (a phone between Wi-Fi and mobile data, a laptop at
// home and at work) and an address is shared by everyone behind one NAT.
const (
	deviceCookie       = "tollgate_device"
	secureDeviceCookie = "__Host-tollgate_device"
	deviceCookieTTL    = 30 * 24 * time.Hour
)

func (s *Server) deviceKey() []byte {
	s.deviceOnce.Do(func() {
		if len(s.DeviceKey) == 0 {
			s.DeviceKey = make([]byte, 32)
			_, _ = rand.Read(s.DeviceKey)
		}
	})
	return s.DeviceKey
}

func (s *Server) deviceCookieName(r *http.Request) string {
	if s.sessions.secure(r) {
		return secureDeviceCookie
	}
	return deviceCookie
}

func (s *Server) deviceMAC(email string, expires int64) string {
	m := hmac.New(sha256.New, s.deviceKey())
	m.Write([]byte(email + "\n" + strconv.FormatInt(expires, 10)))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// markDevice gives the browser a device cookie for email, after a
// successful login.
func (s *Server) markDevice(w http.ResponseWriter, r *http.Request, email string) {
	expires := s.Clock.Now().Add(deviceCookieTTL).Unix()
	value := base64.RawURLEncoding.EncodeToString([]byte(email)) + "." + strconv.FormatInt(expires, 10) + "." + s.deviceMAC(email, expires)
	http.SetCookie(w, &http.Cookie{Name: s.deviceCookieName(r), Value: value, Path: "/", MaxAge: int(deviceCookieTTL.Seconds()),
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: s.sessions.secure(r)})
}

// knownDevice is the login limiter's key for the request's browser when
// it carries a valid, unexpired device cookie for email, else "".
func (s *Server) knownDevice(r *http.Request, email string) string {
	c, err := r.Cookie(s.deviceCookieName(r))
	if err != nil {
		return ""
	}
	parts := strings.Split(c.Value, ".")
	if len(parts) != 3 {
		return ""
	}
	owner, err := base64.RawURLEncoding.DecodeString(parts[0])
	expires, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || err2 != nil || string(owner) != email || s.Clock.Now().Unix() >= expires {
		return ""
	}
	if !hmac.Equal([]byte(parts[2]), []byte(s.deviceMAC(email, expires))) {
		return ""
	}
	return "device:" + parts[2]
}
