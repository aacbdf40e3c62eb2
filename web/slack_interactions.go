package web

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/views"
)

// maxSlackInteraction bounds the body of an interaction Slack sends.
const maxSlackInteraction = 256 << 10

// Modal callback ids.
const (
	slackDecideModal = "tollgate_decide"
	slackAnswerModal = "tollgate_answer"
	slackCommentID   = "comment"
)

// slackInteractions takes the clicks and modal submissions of the messages
// Tollgate posted (Slack's interactivity request URL). A request that is
// not signed with the signing secret, whose signature is wrong, that is
// older than five minutes, or that was already taken (a replay) is
// refused with 401 and changes nothing. The Slack user is the Tollgate
// person with the email Slack reports for them (users.info); their
// decision goes through the engine as from the page, on channel slack.
func (s *Server) slackInteractions(w http.ResponseWriter, r *http.Request) {
	sl := s.Slack
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxSlackInteraction))
	if err != nil {
		http.Error(w, "the interaction is too large", http.StatusRequestEntityTooLarge)
		return
	}
	sv, err := slack.NewSecretsVerifier(r.Header, sl.SigningSecret)
	if err == nil {
		_, _ = sv.Write(body)
		err = sv.Ensure()
	}
	if err == nil && !sl.firstSight(r.Header.Get("X-Slack-Signature"), time.Now()) {
		err = errors.New("replayed")
	}
	if err != nil {
		s.Log.WarnContext(r.Context(), "A Slack interaction was refused", "reason", err.Error())
		http.Error(w, "not a signed Slack request", http.StatusUnauthorized)
		return
	}
	form, err := url.ParseQuery(string(body))
	var cb slack.InteractionCallback
	if err == nil {
		err = json.Unmarshal([]byte(form.Get("payload")), &cb)
	}
	if err != nil {
		http.Error(w, "the interaction cannot be read", http.StatusBadRequest)
		return
	}
	switch cb.Type {
	case slack.InteractionTypeBlockActions:
		s.slackAction(w, r, &cb)
	case slack.InteractionTypeViewSubmission:
		s.slackSubmission(w, r, &cb)
	default:
		w.WriteHeader(http.StatusOK)
	}
}

// firstSight records an interaction's signature and reports whether it is
// new: Slack's signatures are good for five minutes, and one seen in them
// is a replay. Signatures older than that are forgotten.
func (sl *Slack) firstSight(signature string, now time.Time) bool {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.seen == nil {
		sl.seen = map[string]time.Time{}
	}
	for sig, at := range sl.seen {
		if now.Sub(at) > 6*time.Minute {
			delete(sl.seen, sig)
		}
	}
	if _, ok := sl.seen[signature]; ok {
		return false
	}
	sl.seen[signature] = now
	return true
}

// slackCaller is who clicked, as Tollgate knows them, and where.
type slackCaller struct {
	user    domain.User
	slackID string
	channel string
}

// slackPerson finds the Tollgate person of Slack user id by the email
// Slack reports for them, or tells them in Slack why there is none and
// returns false.
func (s *Server) slackPerson(ctx context.Context, cb *slack.InteractionCallback) (slackCaller, bool) {
	c := slackCaller{slackID: cb.User.ID, channel: cb.Channel.ID}
	if c.channel == "" {
		c.channel = cb.Container.ChannelID
	}
	info, err := s.Slack.Client.GetUserInfoContext(ctx, cb.User.ID)
	if err != nil {
		s.Log.WarnContext(ctx, "Reading a Slack user failed", "error", err)
		s.slackSay(ctx, c, "Tollgate could not read who you are in Slack just now. Try again shortly.")
		return c, false
	}
	email := strings.ToLower(strings.TrimSpace(info.Profile.Email))
	u, ok := domain.User{}, false
	if email != "" {
		// The address exactly, as signing in with the provider: a person
		// is who they are by their own address.
		u, _, err = s.Auth.UserByEmail(ctx, email)
		ok = err == nil
	}
	team, err := s.Slack.team(ctx)
	switch {
	case err != nil:
		s.Log.WarnContext(ctx, "Reading the Slack workspace failed", "error", err)
		s.slackSay(ctx, c, "Tollgate could not check your Slack workspace just now. Try again shortly.")
		ok = false
	case cb.Team.ID != team || info.TeamID != team:
		// A person of another workspace (Slack Connect) may have any
		// email: only this workspace's people decide.
		s.slackSay(ctx, c, "Tollgate takes decisions only from people of its own Slack workspace. Decide in Tollgate instead.")
		ok = false
	case email == "":
		s.slackSay(ctx, c, "Slack does not share your email with Tollgate, so it cannot tell who you are. Decide in Tollgate instead.")
	case !ok:
		s.slackSay(ctx, c, "Tollgate has no account for "+email+", the email of your Slack profile, so it cannot take your decision. Ask an admin to invite you.")
	case u.Disabled:
		s.slackSay(ctx, c, "Your Tollgate account is disabled, so it cannot take your decision.")
		ok = false
	}
	c.user = u
	return c, ok
}

// slackSay tells the person who clicked, in the channel, visible to them
// alone.
func (s *Server) slackSay(ctx context.Context, c slackCaller, text string) {
	if c.channel == "" {
		return
	}
	if _, err := s.Slack.Client.PostEphemeralContext(ctx, c.channel, c.slackID, slack.MsgOptionText(text, false)); err != nil {
		s.Log.WarnContext(ctx, "Telling a Slack user why failed", "error", err)
	}
}

// slackAction takes a click on a request's message: Approve or Reject
// decides at once, or opens a modal for the comment the request needs;
// Answer opens an input's form.
func (s *Server) slackAction(w http.ResponseWriter, r *http.Request, cb *slack.InteractionCallback) {
	// Slack wants an answer within three seconds: it goes at once, and
	// what follows is told in Slack.
	w.WriteHeader(http.StatusOK)
	_ = http.NewResponseController(w).Flush()
	if len(cb.ActionCallback.BlockActions) == 0 {
		return
	}
	a := cb.ActionCallback.BlockActions[0]
	if a.ActionID != slackApprove && a.ActionID != slackReject && a.ActionID != slackAnswer {
		return
	}
	ctx := r.Context()
	c, ok := s.slackPerson(ctx, cb)
	if !ok {
		return
	}
	sp, err := s.Store.Suspension(ctx, a.Value)
	if err != nil {
		s.slackSay(ctx, c, "This request is no longer in Tollgate.")
		return
	}
	meta, _ := json.Marshal(slackModalMeta{Suspension: sp.ID, Decision: a.ActionID, Channel: c.channel})
	if a.ActionID == slackAnswer {
		s.slackOpen(ctx, c, cb.TriggerID, slackAnswerView(sp, string(meta)))
		return
	}
	approve := a.ActionID == slackApprove
	rule, _ := AskedOf(sp)
	if rule == views.CommentRequired || !approve && rule == views.CommentRequiredToReject {
		s.slackOpen(ctx, c, cb.TriggerID, slackCommentView(sp, approve, string(meta)))
		return
	}
	if why := s.slackDecide(r, c, sp, approve, ""); why != "" {
		s.slackSay(ctx, c, why)
	}
}

func (s *Server) slackOpen(ctx context.Context, c slackCaller, trigger string, v slack.ModalViewRequest) {
	if _, err := s.Slack.Client.OpenViewContext(ctx, trigger, v); err != nil {
		s.Log.WarnContext(ctx, "Opening a Slack modal failed", "error", err)
		s.slackSay(ctx, c, "Slack could not open the form. Open the request in Tollgate instead.")
	}
}

// slackModalMeta is what a modal carries from the click to its submission.
type slackModalMeta struct {
	Suspension string `json:"s"`
	Decision   string `json:"d"`
	Channel    string `json:"c"`
}

// slackDecide decides approval sp as c's person, through the engine, and
// writes the request's messages again; it returns why not in a sentence.
func (s *Server) slackDecide(r *http.Request, c slackCaller, sp domain.Suspension, approve bool, comment string) string {
	u := c.user
	req := domain.ResumeRequest{SuspensionID: sp.ID, By: u.Email, Actor: &u, Channel: domain.ChannelSlack}
	req.Audit = s.AuditEntry(r, domain.AuditEntry{ActorID: u.ID, ActorEmail: u.Email, Action: DecisionAction(approve),
		Data: AuditData(map[string]any{"runId": sp.RunID, "comment": comment, "via": domain.ChannelSlack})})
	_, err := s.Engine.Decide(r.Context(), req, approve, comment)
	return s.slackAfter(r.Context(), sp.ID, err)
}

// slackAfter writes a request's messages again after a decision, or says
// why the decision was refused.
func (s *Server) slackAfter(ctx context.Context, suspensionID string, err error) string {
	if err == nil {
		if s.Slack.Refresh != nil {
			// After the answer: a request posted to many people has as many
			// messages to write.
			go func() {
				ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
				defer cancel()
				if err := s.Slack.Refresh(ctx, suspensionID); err != nil {
					s.Log.WarnContext(ctx, "Writing a request's Slack messages again failed; the next round does", "error", err)
				}
			}()
		}
		return ""
	}
	var ce *domain.ConflictError
	var ve *domain.ValidationError
	switch {
	case errors.Is(err, domain.ErrSeparationOfDuties):
		return DutyMessage(err)
	case errors.Is(err, domain.ErrNotApprover), errors.Is(err, domain.ErrMachineWait):
		return "You may not decide this request. Ask an admin if you should."
	case errors.As(err, &ce) && ce.Code == domain.CodeAlreadyVoted:
		return "Your vote on this request already counts: each person votes once."
	case errors.As(err, &ce):
		return "This request no longer waits: it was decided, cancelled or has expired."
	case errors.As(err, &ve):
		return ve.Message
	}
	s.Log.ErrorContext(ctx, "A decision from Slack failed", "suspension_id", suspensionID, "error", err)
	return "Tollgate could not take your decision just now. Try again shortly."
}

// slackCommentView is the modal that asks for the comment a decision
// needs.
func slackCommentView(sp domain.Suspension, approve bool, meta string) slack.ModalViewRequest {
	verb := map[bool]string{true: "Approve", false: "Reject"}[approve]
	input := slack.NewPlainTextInputBlockElement(slack.NewTextBlockObject(slack.PlainTextType, "Why", false, false), "v")
	input.Multiline = true
	block := slack.NewInputBlock(slackCommentID, slack.NewTextBlockObject(slack.PlainTextType, "Comment", false, false), nil, input)
	return slack.ModalViewRequest{Type: slack.VTModal, CallbackID: slackDecideModal, PrivateMetadata: meta,
		Title:  slack.NewTextBlockObject(slack.PlainTextType, clip(verb+" request", 24), false, false),
		Submit: slack.NewTextBlockObject(slack.PlainTextType, verb, false, false),
		Close:  slack.NewTextBlockObject(slack.PlainTextType, "Cancel", false, false),
		Blocks: slack.Blocks{BlockSet: []slack.Block{
			slack.NewSectionBlock(slackText("*"+slackEscape(clip(sp.Title, 200))+"*\nThis decision needs a comment."), nil, nil),
			block,
		}},
	}
}

// slackForm is an input's form when Slack can show it: every field a
// string, number, integer, boolean or choice; nil otherwise.
func slackForm(sp domain.Suspension) []views.FormField {
	fields, ok := FormFields(sp.ResumeSchema)
	if !ok || len(fields) > 20 {
		return nil
	}
	for _, f := range fields {
		switch f.Type {
		case "string", "number", "integer", "boolean":
		default:
			return nil
		}
	}
	return fields
}

// slackAnswerView is the modal of an input's form.
func slackAnswerView(sp domain.Suspension, meta string) slack.ModalViewRequest {
	var blocks []slack.Block
	for _, f := range slackForm(sp) {
		label := slack.NewTextBlockObject(slack.PlainTextType, clip(f.Label, 2000), false, false)
		var hint *slack.TextBlockObject
		if f.Description != "" {
			hint = slack.NewTextBlockObject(slack.PlainTextType, clip(f.Description, 2000), false, false)
		}
		var el slack.BlockElement
		switch {
		case len(f.Options) > 0:
			var opts []*slack.OptionBlockObject
			for _, o := range f.Options {
				opts = append(opts, slack.NewOptionBlockObject(o.Value, slack.NewTextBlockObject(slack.PlainTextType, clip(o.Label, 75), false, false), nil))
			}
			el = slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, nil, "v", opts...)
		case f.Type == "boolean":
			el = slack.NewCheckboxGroupsBlockElement("v", slack.NewOptionBlockObject("true", slack.NewTextBlockObject(slack.PlainTextType, "Yes", false, false), nil))
		case f.Type == "number" || f.Type == "integer":
			el = slack.NewNumberInputBlockElement(nil, "v", f.Type == "number")
		default:
			el = slack.NewPlainTextInputBlockElement(nil, "v")
		}
		in := slack.NewInputBlock(f.Name(), label, hint, el)
		in.Optional = !f.Required || f.Type == "boolean"
		blocks = append(blocks, in)
	}
	return slack.ModalViewRequest{Type: slack.VTModal, CallbackID: slackAnswerModal, PrivateMetadata: meta,
		Title:  slack.NewTextBlockObject(slack.PlainTextType, "Answer", false, false),
		Submit: slack.NewTextBlockObject(slack.PlainTextType, "Send", false, false),
		Close:  slack.NewTextBlockObject(slack.PlainTextType, "Cancel", false, false),
		Blocks: slack.Blocks{BlockSet: blocks},
	}
}

// slackSubmission takes a modal's submission: the comment of a decision,
// or an input's answer. What is wrong is shown in the modal, by field.
func (s *Server) slackSubmission(w http.ResponseWriter, r *http.Request, cb *slack.InteractionCallback) {
	ctx := r.Context()
	var meta slackModalMeta
	if json.Unmarshal([]byte(cb.View.PrivateMetadata), &meta) != nil || meta.Suspension == "" {
		w.WriteHeader(http.StatusOK)
		return
	}
	cb.Channel.ID = meta.Channel
	c, ok := s.slackPerson(ctx, cb)
	if !ok {
		WriteJSON(w, http.StatusOK, slack.NewClearViewSubmissionResponse())
		return
	}
	sp, err := s.Store.Suspension(ctx, meta.Suspension)
	if err != nil {
		WriteJSON(w, http.StatusOK, slack.NewErrorsViewSubmissionResponse(map[string]string{slackCommentID: "This request is no longer in Tollgate."}))
		return
	}
	values := map[string]map[string]slack.BlockAction{}
	if cb.View.State != nil {
		values = cb.View.State.Values
	}
	var why string
	field := slackCommentID
	if cb.View.CallbackID == slackAnswerModal {
		why, field = s.slackAnswer(r, c, sp, values)
	} else {
		comment := strings.TrimSpace(values[slackCommentID]["v"].Value)
		why = s.slackDecide(r, c, sp, meta.Decision == slackApprove, comment)
	}
	if why != "" {
		WriteJSON(w, http.StatusOK, slack.NewErrorsViewSubmissionResponse(map[string]string{field: why}))
		return
	}
	WriteJSON(w, http.StatusOK, slack.NewClearViewSubmissionResponse())
}

// slackAnswer resumes input sp with the answer of its modal, as c's
// person; it returns why not, and the block to show it at.
func (s *Server) slackAnswer(r *http.Request, c slackCaller, sp domain.Suspension, values map[string]map[string]slack.BlockAction) (string, string) {
	fields := slackForm(sp)
	if len(fields) == 0 {
		return "Answer this request in Tollgate.", ""
	}
	form := url.Values{}
	for _, f := range fields {
		a := values[f.Name()]["v"]
		switch {
		case a.SelectedOption.Value != "":
			form.Set(f.Name(), a.SelectedOption.Value)
		case f.Type == "boolean":
			form.Set(f.Name(), map[bool]string{true: "true", false: ""}[len(a.SelectedOptions) > 0])
		default:
			form.Set(f.Name(), a.Value)
		}
	}
	value, _, errs := FormValue(fields, form, time.UTC)
	if len(errs) > 0 {
		errs = AllFormErrors(sp.ResumeSchema, value, errs)
	} else {
		data, _ := json.Marshal(value)
		if ve, ok := errors.AsType[*domain.ValidationError](ValidateResumeData(sp.ResumeSchema, data)); ok {
			errs = ve.Fields
		}
		if len(errs) == 0 {
			u := c.user
			req := domain.ResumeRequest{SuspensionID: sp.ID, By: u.Email, Actor: &u, Channel: domain.ChannelSlack, Data: data}
			req.Audit = s.AuditEntry(r, domain.AuditEntry{ActorID: u.ID, ActorEmail: u.Email, Action: "suspension.resume",
				Data: AuditData(map[string]any{"runId": sp.RunID, "resumeData": json.RawMessage(data), "via": domain.ChannelSlack})})
			_, err := s.Engine.Resume(r.Context(), req)
			return s.slackAfter(r.Context(), sp.ID, err), fields[0].Name()
		}
	}
	for _, e := range errs {
		ptr := strings.TrimPrefix(e.Field, "/resumeData")
		for _, f := range fields {
			if f.Pointer == ptr || ptr == "" {
				return e.Message, f.Name()
			}
		}
	}
	return "There is a problem with the answer.", fields[0].Name()
}
