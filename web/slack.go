package web

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/chat"
	"github.com/tollgatehq/tollgate/domain/mail"
)

// Slack connects Tollgate to a Slack workspace through its Web API: the
// chat dispatcher posts requests with it (it is a chat.Poster), and people
// decide them with the messages' buttons and modals (POST
// /slack/interactions, on a Server whose Slack it is).
type Slack struct {
	// Client calls Slack's Web API with the bot token.
	Client *slack.Client
	// SigningSecret checks that interactions come from Slack.
	SigningSecret string
	// PublicURL is where people open Tollgate, for the messages' links.
	PublicURL string
	// People finds Tollgate's account for an email (the voters' names,
	// the person who clicked).
	People domain.AuthStore
	// Refresh writes a request's messages again at once (the chat
	// dispatcher's Refresh); nil leaves it to the dispatcher's next round.
	Refresh func(ctx context.Context, suspensionID string) error

	mu       sync.Mutex
	channels map[string]string    // channel name → id
	seen     map[string]time.Time // interaction signatures of the last five minutes
	teamID   string               // the bot's workspace, once read
}

// team is the id of the workspace the bot token belongs to (auth.test),
// read once.
func (s *Slack) team(ctx context.Context) (string, error) {
	s.mu.Lock()
	id := s.teamID
	s.mu.Unlock()
	if id != "" {
		return id, nil
	}
	a, err := s.Client.AuthTestContext(ctx)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	s.teamID = a.TeamID
	s.mu.Unlock()
	return a.TeamID, nil
}

// NewSlack is a Slack client for the bot token; apiURL, when set, is the
// Web API's address (https://slack.com/api/ by default), for tests.
func NewSlack(token, signingSecret, apiURL string) *Slack {
	// A call that hangs must not outlive the lease of the message it posts.
	opts := []slack.Option{slack.OptionHTTPClient(&http.Client{Timeout: 10 * time.Second})}
	if apiURL != "" {
		opts = append(opts, slack.OptionAPIURL(strings.TrimRight(apiURL, "/")+"/"))
	}
	return &Slack{Client: slack.New(token, opts...), SigningSecret: signingSecret}
}

// slackEvent marks the messages Tollgate posts, with the id of their row,
// so that a post whose outcome was lost is found again (Find).
const slackEvent = "tollgate_request"

var _ chat.Poster = (*Slack)(nil)

// Post implements chat.Poster.
func (s *Slack) Post(ctx context.Context, m domain.SlackMessage) (string, string, error) {
	channel, err := s.channelOf(ctx, m)
	if err != nil {
		return "", "", err
	}
	text, blocks := s.message(ctx, m.Suspension)
	meta := slack.SlackMetadata{EventType: slackEvent, EventPayload: map[string]any{"message": strconv.FormatInt(m.ID, 10), "suspension": m.Suspension.ID}}
	ch, ts, err := s.Client.PostMessageContext(ctx, channel, slack.MsgOptionText(text, true), slack.MsgOptionBlocks(blocks...), slack.MsgOptionMetadata(meta))
	return ch, ts, permanent(err)
}

// Find implements chat.Poster: it reads the channel's messages of the
// last two days for one marked with m's id.
func (s *Slack) Find(ctx context.Context, m domain.SlackMessage) (string, string, bool, error) {
	channel, err := s.channelOf(ctx, m)
	if err != nil {
		return "", "", false, err
	}
	if strings.HasPrefix(channel, "#") {
		if channel, err = s.channelID(ctx, channel); err != nil {
			return "", "", false, err
		}
	}
	want := strconv.FormatInt(m.ID, 10)
	p := &slack.GetConversationHistoryParameters{ChannelID: channel, Limit: 200, IncludeAllMetadata: true,
		Oldest: strconv.FormatInt(time.Now().Add(-48*time.Hour).Unix(), 10)}
	for {
		h, err := s.Client.GetConversationHistoryContext(ctx, p)
		if err != nil {
			return "", "", false, permanent(err)
		}
		for _, msg := range h.Messages {
			if msg.Metadata.EventType == slackEvent && fmt.Sprint(msg.Metadata.EventPayload["message"]) == want {
				return channel, msg.Timestamp, true, nil
			}
		}
		if !h.HasMore || h.ResponseMetaData.NextCursor == "" {
			return "", "", false, nil
		}
		p.Cursor = h.ResponseMetaData.NextCursor
	}
}

// Update implements chat.Poster.
func (s *Slack) Update(ctx context.Context, m domain.SlackMessage) error {
	text, blocks := s.message(ctx, m.Suspension)
	_, _, _, err := s.Client.UpdateMessageContext(ctx, m.ChannelID, m.TS, slack.MsgOptionText(text, true), slack.MsgOptionBlocks(blocks...))
	return permanent(err)
}

// channelOf is where m goes: its channel, or the DM with the person whose
// email it names.
func (s *Slack) channelOf(ctx context.Context, m domain.SlackMessage) (string, error) {
	if !m.DM {
		return m.Target, nil
	}
	u, err := s.Client.GetUserByEmailContext(ctx, m.Target)
	if err != nil {
		return "", permanent(err)
	}
	ch, _, _, err := s.Client.OpenConversationContext(ctx, &slack.OpenConversationParameters{Users: []string{u.ID}})
	if err != nil {
		return "", permanent(err)
	}
	return ch.ID, nil
}

// channelID is the id of the channel named name (#approvals), read once.
func (s *Slack) channelID(ctx context.Context, name string) (string, error) {
	name = strings.TrimPrefix(name, "#")
	s.mu.Lock()
	id, ok := s.channels[name]
	s.mu.Unlock()
	if ok {
		return id, nil
	}
	p := &slack.GetConversationsParameters{Types: []string{"public_channel", "private_channel"}, Limit: 1000, ExcludeArchived: true}
	for {
		list, next, err := s.Client.GetConversationsContext(ctx, p)
		if err != nil {
			return "", permanent(err)
		}
		s.mu.Lock()
		if s.channels == nil {
			s.channels = map[string]string{}
		}
		for _, c := range list {
			s.channels[c.Name] = c.ID
		}
		id, ok = s.channels[name]
		s.mu.Unlock()
		if ok {
			return id, nil
		}
		if next == "" {
			return "", &chat.PermanentError{Err: fmt.Errorf("slack: no channel #%s the bot can read", name)}
		}
		p.Cursor = next
	}
}

// permanent marks the Slack errors that trying again does not mend.
func permanent(err error) error {
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		switch se.Err {
		case "channel_not_found", "not_in_channel", "is_archived", "users_not_found", "user_not_found", "invalid_auth",
			"message_not_found", "cant_update_message", "edit_window_closed",
			"account_inactive", "token_revoked", "missing_scope", "restricted_action", "cannot_dm_bot", "user_disabled":
			return &chat.PermanentError{Err: fmt.Errorf("slack: %s", se.Err)}
		}
	}
	return err
}

// Slack's action ids on a request's message.
const (
	slackApprove = "tollgate_approve"
	slackReject  = "tollgate_reject"
	slackAnswer  = "tollgate_answer"
	slackOpen    = "tollgate_open"
)

// message is a request as its Slack message shows it: its title, fields,
// what is asked and by when, who voted, and the buttons to decide while
// it waits, or what became of it; with the text notifications show.
func (s *Slack) message(ctx context.Context, sp domain.Suspension) (string, []slack.Block) {
	title := cmp.Or(sp.Title, sp.ReasonName(), "A request")
	blocks := []slack.Block{slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, clip(title, 150), false, false))}
	var fields []*slack.TextBlockObject
	for _, f := range sp.Fields {
		if len(fields) == 10 {
			break
		}
		fields = append(fields, slackText("*"+slackEscape(f.Label)+"*\n"+slackEscape(mail.FormatField(f))))
	}
	asked := slackEscape(slackAsked(sp))
	if sp.WakeAt != nil && sp.Status == domain.SuspensionPending {
		asked += fmt.Sprintf("\nDecide by <!date^%d^{date_short_pretty} at {time}|%s>.", sp.WakeAt.Unix(), sp.WakeAt.UTC().Format("2 Jan 2006 15:04 MST"))
	}
	blocks = append(blocks, slack.NewSectionBlock(slackText(asked), fields, nil))
	if said := s.votesSaid(ctx, sp); said != "" {
		blocks = append(blocks, slack.NewContextBlock("votes", slackText(said)))
	}
	link := s.PublicURL + "/suspensions/" + url.PathEscape(sp.ID)
	open := slack.NewButtonBlockElement(slackOpen, sp.ID, slack.NewTextBlockObject(slack.PlainTextType, "Open in Tollgate", false, false)).WithURL(link)
	if sp.Status != domain.SuspensionPending {
		outcome := s.outcomeSaid(ctx, sp)
		blocks = append(blocks, slack.NewSectionBlock(slackText(outcome), nil, nil), slack.NewActionBlock("open", open))
		return title + ": " + outcome, blocks
	}
	var buttons []slack.BlockElement
	switch {
	case sp.Kind == domain.KindApproval:
		buttons = append(buttons,
			slack.NewButtonBlockElement(slackApprove, sp.ID, slack.NewTextBlockObject(slack.PlainTextType, "Approve", false, false)).WithStyle(slack.StylePrimary),
			slack.NewButtonBlockElement(slackReject, sp.ID, slack.NewTextBlockObject(slack.PlainTextType, "Reject", false, false)).WithStyle(slack.StyleDanger))
	case sp.Kind == domain.KindInput && len(sp.Accept) == 0 && slackForm(sp) != nil:
		buttons = append(buttons, slack.NewButtonBlockElement(slackAnswer, sp.ID, slack.NewTextBlockObject(slack.PlainTextType, "Answer", false, false)).WithStyle(slack.StylePrimary))
	}
	blocks = append(blocks, slack.NewActionBlock("decide", append(buttons, open)...))
	return title + ": " + asked, blocks
}

// slackAsked is what a request asks, in a sentence.
func slackAsked(sp domain.Suspension) string {
	switch {
	case sp.Instructions != "":
		return sp.Instructions
	case sp.Kind == domain.KindApproval:
		return "Approve or reject it."
	case len(sp.Accept) > 0:
		return "Upload the documents it asks for in Tollgate."
	}
	return "Supply what it asks for."
}

// votesSaid tells an approval's votes so far, each by whom and where:
// "Approved by Rita Reviewer (1 of 2)".
func (s *Slack) votesSaid(ctx context.Context, sp domain.Suspension) string {
	if sp.Kind != domain.KindApproval || len(sp.Votes) == 0 || sp.Status != domain.SuspensionPending {
		return ""
	}
	need, _ := sp.Policy.Needed()
	var lines []string
	approvals := 0
	for _, v := range sp.Votes {
		who := slackEscape(s.nameOf(ctx, v.Voter))
		if v.Decision == domain.DecisionApproved {
			approvals++
			lines = append(lines, fmt.Sprintf("Approved by %s (%d of %d)%s", who, approvals, need, whereSaid(v.Channel)))
		} else {
			lines = append(lines, "Rejected by "+who+whereSaid(v.Channel))
		}
	}
	return strings.Join(lines, "\n")
}

// outcomeSaid tells what became of a request that no longer waits.
func (s *Slack) outcomeSaid(ctx context.Context, sp domain.Suspension) string {
	by := slackEscape(s.nameOf(ctx, sp.ResumedBy))
	where := ""
	if len(sp.Votes) > 0 {
		last := sp.Votes[len(sp.Votes)-1]
		if last.Channel != domain.ChannelSlack {
			where = " in Tollgate"
		}
		if c := strings.TrimSpace(last.Comment); c != "" {
			by += ": “" + slackEscape(clip(c, 500)) + "”"
		}
	}
	switch {
	case sp.Decision == domain.DecisionApproved:
		return ":white_check_mark: *Approved*" + where + " by " + by
	case sp.Decision == domain.DecisionRejected:
		return ":x: *Rejected*" + where + " by " + by
	case sp.Status == domain.SuspensionResumed:
		return ":white_check_mark: *Answered*" + where + " by " + by
	case sp.Status == domain.SuspensionCancelled:
		return ":no_entry_sign: *Cancelled*: the run no longer waits for it."
	}
	return ":hourglass: *Expired*: nobody decided it in time."
}

func whereSaid(channel string) string {
	if channel == domain.ChannelSlack {
		return ""
	}
	return " in Tollgate"
}

// nameOf is the name of the person with this email, or the email.
func (s *Slack) nameOf(ctx context.Context, email string) string {
	if s.People != nil && strings.Contains(email, "@") {
		if u, err := AccountOf(ctx, s.People, email); err == nil && u.Name != "" {
			return u.Name
		}
	}
	return cmp.Or(email, "someone")
}

// slackText is mrkdwn text of Tollgate's own, with what people wrote in it
// escaped (slackEscape): verbatim, so that Slack turns no name or URL in
// it into a mention or a link.
func slackText(text string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.MarkdownType, text, false, true)
}

// slackEscape escapes the three characters Slack's mrkdwn reads as markup.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
