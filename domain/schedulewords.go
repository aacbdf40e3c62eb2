package domain

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Words is the schedule's rule as a person says it, with its time zone:
// "Every weekday at 09:00 Europe/Lisbon", "Every 15 minutes". A rule with
// no plain reading is quoted.
func (s ScheduleSpec) Words() string {
	if s.Every > 0 {
		return "Every " + intervalWords(s.Every)
	}
	zone := s.Timezone
	if zone == "" {
		zone = "UTC"
	}
	return cronWords(s.Cron) + " " + zone
}

func intervalWords(d time.Duration) string {
	for _, u := range []struct {
		unit time.Duration
		name string
	}{{24 * time.Hour, "day"}, {time.Hour, "hour"}, {time.Minute, "minute"}, {time.Second, "second"}} {
		if d%u.unit == 0 {
			return plural(int(d/u.unit), u.name)
		}
	}
	return plural(int(d.Milliseconds()), "millisecond")
}

func plural(n int, unit string) string {
	if n == 1 {
		return unit
	}
	return strconv.Itoa(n) + " " + unit + "s"
}

var cronDescriptors = map[string]string{
	"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
	"@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}

var weekdays = []string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}

func cronWords(rule string) string {
	expr := rule
	if d, ok := cronDescriptors[strings.ToLower(rule)]; ok {
		expr = d
	}
	f := strings.Fields(expr)
	quoted := "On the cron rule “" + rule + "”"
	if len(f) != 5 {
		return quoted
	}
	minute, hour, dom, month, dow := f[0], f[1], f[2], f[3], f[4]
	m, mOK := cronNumber(minute, 0, 59)
	h, hOK := cronNumber(hour, 0, 23)
	switch {
	case dom != "*" || month != "*":
		d, dOK := cronNumber(dom, 1, 31)
		if !mOK || !hOK || !dOK || dow != "*" {
			return quoted
		}
		at := fmt.Sprintf("at %02d:%02d", h, m)
		if month == "*" {
			return "On the " + ordinal(d) + " of every month " + at
		}
		mo, ok := cronNumber(month, 1, 12)
		if !ok {
			return quoted
		}
		return fmt.Sprintf("Every year on %d %s %s", d, time.Month(mo), at)
	case mOK && hOK:
		at := fmt.Sprintf("at %02d:%02d", h, m)
		days, ok := dowWords(dow)
		if !ok {
			return quoted
		}
		return "Every " + days + " " + at
	case dow != "*":
		return quoted
	case mOK && hour == "*":
		if m == 0 {
			return "Every hour, on the hour"
		}
		return fmt.Sprintf("Every hour at minute %d", m)
	case mOK && strings.HasPrefix(hour, "*/"):
		n, err := strconv.Atoi(hour[2:])
		if err != nil {
			return quoted
		}
		return fmt.Sprintf("Every %s at minute %d", plural(n, "hour"), m)
	case minute == "*" && hour == "*":
		return "Every minute"
	case strings.HasPrefix(minute, "*/") && hour == "*":
		n, err := strconv.Atoi(minute[2:])
		if err != nil {
			return quoted
		}
		return "Every " + plural(n, "minute")
	}
	return quoted
}

// cronNumber is a cron field that is one number within [lo, hi].
func cronNumber(field string, lo, hi int) (int, bool) {
	n, err := strconv.Atoi(field)
	return n, err == nil && n >= lo && n <= hi
}

// dowWords reads a day-of-week field: "*", a range or a list of days.
func dowWords(field string) (string, bool) {
	switch strings.ToUpper(field) {
	case "*":
		return "day", true
	case "1-5", "MON-FRI":
		return "weekday", true
	case "0,6", "6,0", "SAT,SUN", "SUN,SAT":
		return "Saturday and Sunday", true
	}
	var names []string
	for _, part := range strings.Split(field, ",") {
		n, ok := dayNumber(part)
		if !ok {
			return "", false
		}
		names = append(names, weekdays[n])
	}
	if len(names) == 1 {
		return names[0], true
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1], true
}

func dayNumber(s string) (int, bool) {
	if n, err := strconv.Atoi(s); err == nil && n >= 0 && n <= 7 {
		return n % 7, true
	}
	for i, d := range weekdays {
		if strings.EqualFold(s, d[:3]) {
			return i, true
		}
	}
	return 0, false
}

func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return strconv.Itoa(n) + suffix
}
