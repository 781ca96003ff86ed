// Writes each time of the page in the browser's own time zone. Optional: without it (or
// without JavaScript) the page shows the same times in UTC.
"use strict";
for (const time of document.querySelectorAll("time[datetime]")) {
  const date = new Date(time.dateTime);
  if (!Number.isNaN(date.getTime())) {
    time.title = time.textContent;
    time.textContent = date.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
  }
}
