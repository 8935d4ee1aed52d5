// The playground's page state in the URL (step 22). Not written yet: the playground step adds it here.
(function () {
  "use strict";
})();
