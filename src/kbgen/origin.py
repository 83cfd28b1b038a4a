"""Where a bug was first reported outside kbgen: the GitHub issue ``kbgen import --github`` made it from.

Every value is checked as hostile input: the address is an ``https://github.com/OWNER/REPO/issues/N``
(or ``/pull/N``) address and nothing else, the author a GitHub login, the labels short one-line
text. The bug page links the address, so a ``javascript:`` or look-alike host never reaches it.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints, model_validator

#: an issue's or pull request's address on github.com; owner and repository as GitHub spells them
GITHUB_URL_RE = r"^https://github\.com/[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}/(?:issues|pull)/[0-9]{1,19}$"
#: a GitHub login; an app's author is printed by gh as ``app/NAME``
LOGIN_RE = r"^(?:app/)?[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?$"
#: a label: one line of at most 100 characters, no control characters
LABEL_RE = r"^[^\x00-\x1f\x7f-\x9f]{1,100}$"


def _printable(text: str) -> str:
    """No line or paragraph separator, no invisible or direction-changing character."""
    if not text.isprintable():
        raise ValueError("holds a character that does not print")
    return text


MAX_LABELS = 100

GithubUrl = Annotated[str, StringConstraints(pattern=GITHUB_URL_RE)]
Login = Annotated[str, StringConstraints(pattern=LOGIN_RE)]
LabelName = Annotated[str, StringConstraints(pattern=LABEL_RE), AfterValidator(_printable)]


class Origin(BaseModel):
    """The GitHub issue a bug was imported from: its number, address, author and labels."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    number: int = Field(ge=1, lt=2**63, description="the issue's number in its repository")
    url: GithubUrl | None = None
    author: Login | None = None
    labels: list[LabelName] = Field(default=[], max_length=MAX_LABELS)

    @model_validator(mode="after")
    def _same_issue(self) -> Origin:
        if self.url is not None and not self.url.endswith(f"/{self.number}"):
            raise ValueError(f"url {self.url} is not the address of issue #{self.number}")
        return self
