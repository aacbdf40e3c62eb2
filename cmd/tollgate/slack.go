package main

import (
	"errors"

	"github.com/tollgatehq/tollgate"
)

// slackConfig connects serve to a Slack app.
type slackConfig struct {
	SlackBotToken      string `name:"slack-bot-token" env:"TOLLGATE_SLACK_BOT_TOKEN" help:"Bot token (xoxb-…) of the Slack app that posts requests whose workflow or step names a slack target (prefer the environment variable to the flag)."`
	SlackSigningSecret string `name:"slack-signing-secret" env:"TOLLGATE_SLACK_SIGNING_SECRET" help:"Signing secret of that Slack app, which checks that decisions sent to <public URL>/slack/interactions come from Slack."`
	SlackAPIURL        string `name:"slack-api-url" env:"TOLLGATE_SLACK_API_URL" help:"Slack's Web API address (default https://slack.com/api/)."`
}

// check refuses half a Slack configuration.
func (c slackConfig) check() error {
	if (c.SlackBotToken == "") != (c.SlackSigningSecret == "") {
		return errors.New("--slack-bot-token and --slack-signing-secret go together: set both, or neither")
	}
	return nil
}

// config is the Slack app c configures, or nil.
func (c slackConfig) config() *tollgate.SlackConfig {
	if c.SlackBotToken == "" {
		return nil
	}
	return &tollgate.SlackConfig{BotToken: c.SlackBotToken, SigningSecret: c.SlackSigningSecret, APIURL: c.SlackAPIURL}
}
